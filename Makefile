# offlab — one entry point for every job. `make demo` and `make test` are the two that matter.
SHELL := /bin/bash
.DEFAULT_GOAL := demo

VENV    := .venv
PY      := $(VENV)/bin/python
OFFLAB  := $(VENV)/bin/offlab
CARGO   ?= cargo
DEMO_PLAN ?= quick
# What every lab run uses (irtt: the quick plan's RTT under load; sockperf: its request/
# response probe beside the paced streams; python3-venv: `make venv` on Debian). On a
# fresh Debian 12 that is about 5 MB to download (apt-get install --print-uris) and
# 15-20 s with apt-get update (measured here: update 3.5 s, dpkg of the five lab
# packages a cloud image lacks 6.2 s).
DEMO_APT_PKGS := iperf3 ethtool iproute2 procps util-linux kmod irtt sockperf python3-venv
# A plan with QEMU guests: QEMU, and what guest/build.sh builds the guest with.
GUEST_APT_PKGS := qemu-system-x86 binutils cpio xz-utils zstd
# What the tests need beyond those: the SSH rigs' OpenSSH server and client, sudo (a rig
# logs in as a non-root user), PostgreSQL for the team store.
TEST_APT_PKGS := $(DEMO_APT_PKGS) $(GUEST_APT_PKGS) openssh-client openssh-server sudo postgresql
# dpdk-dev ships dpdk-testpmd (W5: testpmd as the vhost-user backend); make test never needs it
BENCH_APT_PKGS := libdpdk-dev dpdk-dev pkg-config valgrind

.PHONY: setup setup-demo setup-test deps deps-demo venv venv-test build capi-so engine-tools guest \
        engine-check-miri engine-check-fuzz engine-check-msrv \
        demo readme-excerpt test test-build test-rust test-engine-checks test-python test-python-unit \
        test-python-integration test-python-lanes test-python-alone test-batch \
        test-rust-run test-binaries bench fuzz install clean

## setup: everything — what `make demo` installs and what `make test` installs
setup: setup-test

## setup-demo: only what the demo plan ($(DEMO_PLAN)) runs: the lab's apt packages, the
## venv, a release build of the binaries the plan runs (offlab-udpload, offlab-fwd) and
## the guest only if the plan has QEMU guests (scripts/plan-needs.py says which). No
## engine-tools, no test packages.
setup-demo: deps-demo venv
	@needs=$$($(PY) scripts/plan-needs.py $(DEMO_PLAN)) || exit 2; \
	crates=$$(grep -x 'offlab-fwd\|offlab-udpload' <<<"$$needs" | sed 's/^/-p /' | tr '\n' ' '); \
	if [ -n "$$crates" ]; then echo "building (release): $$crates"; $(CARGO) build --release --quiet $$crates || exit 1; fi; \
	if grep -qx guest <<<"$$needs"; then $(MAKE) --no-print-directory guest; fi

## setup-test: what `make test` runs: every apt package of the tests, the venv with the
## test tools, the guest, and engine-tools. The apt packages first (dpkg takes one
## lock), then the other three at once: the guest's and the toolchains' downloads wait
## on the network (the guest: 46 s of wall time for 8.5 s of CPU here). No release
## build: the tests run the binaries of test-rust's own build (TEST_BINARIES). Each
## target's output is printed whole when it ends (--output-sync).
setup-test: deps
	@$(MAKE) --no-print-directory -j3 --output-sync=target venv-test guest engine-tools

## guest: the lab's QEMU guest (kernel + initramfs from Debian packages, docs/vms.md),
## rebuilt when its recipe changes; `make guest GUEST_FORCE=1` rebuilds it anyway
## (e.g. to pick up a newer kernel from apt)
GUEST_DIR := build/guest
GUEST_INPUTS := guest/build.sh guest/init.sh guest/agent.sh guest/packages guest/modules
ifdef GUEST_FORCE
.PHONY: $(GUEST_DIR)/manifest.txt
endif
$(GUEST_DIR)/manifest.txt: $(GUEST_INPUTS)
	@$(MAKE) --no-print-directory deps APT='$(GUEST_APT_PKGS)'
	guest/build.sh $(GUEST_DIR)

guest: $(GUEST_DIR)/manifest.txt

## deps: the apt packages in APT (default: the tests' list, which holds the demo's);
## only the missing ones are installed
APT ?= $(TEST_APT_PKGS)
deps:
	@missing=$$(for p in $(APT); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# --no-compile: Python compiles a module's bytecode when it is first imported (and keeps
# it), so only what runs is compiled; pip compiling every module of scipy, pandas and
# matplotlib up front took 12 of the venv's 29 s of CPU here (16 s without it)
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e .
	touch $@

venv: $(VENV)/.installed

# The test tools (pytest, pytest-xdist) on top: `make test`'s, not the demo's.
$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q --no-compile -e '.[test]'
	touch $@

venv-test: $(VENV)/.installed-test

deps-demo:
	@$(MAKE) --no-print-directory deps APT='$(DEMO_APT_PKGS)'

build:
	$(CARGO) build --release --workspace --quiet
	@$(MAKE) --no-print-directory capi-so

## capi-so: the C API's shared library, linked from its static library with symbol
## versions (crates/capi/offlab_engine.map; scripts/capi-so.sh says why cargo's cdylib
## cannot carry them), and its SONAME links, in target/release
CAPI_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' crates/capi/Cargo.toml)
CAPI_ABI := $(shell sed -n 's/^pub const OFL_ABI_MAJOR: u32 = \([0-9]*\);/\1/p' crates/capi/src/lib.rs)
CAPI_SO := libofflab_engine_c.so.$(CAPI_VERSION)
CAPI_SONAME := libofflab_engine_c.so.$(CAPI_ABI)
capi-so:
	$(CARGO) build --release -p offlab-engine-capi --quiet
	scripts/capi-so.sh target/release/libofflab_engine_c.a crates/capi/offlab_engine.map \
	  target/release/$(CAPI_SO) $(CAPI_SONAME)
	ln -sf $(CAPI_SO) target/release/$(CAPI_SONAME)
	ln -sf $(CAPI_SONAME) target/release/libofflab_engine_c.so

## demo: install what the demo plan runs (setup-demo), run it, write the report
demo: setup-demo
	$(OFFLAB) run --plan $(DEMO_PLAN)

## readme-excerpt: README.md's report excerpt from a stored run (RUN=id; default the
## latest in results/offlab.sqlite), written from the run's own report with the machine
## it ran on (scripts/readme-excerpt.py)
RUN ?=
readme-excerpt: venv
	$(PY) scripts/readme-excerpt.py $(RUN)

## test: every test (Rust unit/property/kernel-differential, Python unit/integration),
## packed onto two cores in three steps, each printing a target's output whole when it
## ends (--output-sync):
##   1. what the integration tests need: the venv and the guest (downloads) beside the
##      build of the lab's two binaries (test-binaries); engine-tools' downloads are the
##      batch's, before the engine checks (the lanes do not need them);
##   2. the integration tests' two lanes (test-python-lanes) and, beside them at a lower
##      priority (nice $(BATCH_NICE)), everything that only needs CPU (test-batch: the
##      Rust tests' build and run, the engine checks, the Python unit tests). The lanes
##      spend much of their time waiting on a watchdog's delay, an SSH round trip or a
##      guest's boot (about 1.2 of the 2 cores when they ran alone), and the batch fills
##      those gaps; the lower priority keeps the lanes' controllers, whose watchdogs and
##      timeouts count wall time, from waiting on a compiler;
##   3. the measuring tests, alone (test-python-alone).
## Every step runs whatever an earlier one found; the exit status is non-zero if any failed.
BATCH_NICE ?= 19
test: deps
	@$(MAKE) --no-print-directory -j3 --output-sync=target venv-test guest test-binaries
	@status=0; \
	$(MAKE) --no-print-directory -k -j2 --output-sync=target test-python-lanes test-batch || status=1; \
	$(MAKE) --no-print-directory test-python-alone || status=1; \
	echo "engine checks: $$(cat $(addprefix $(ENGINE_CHECKS_DIR)/,$(addsuffix .txt,$(ENGINE_CHECKS))) 2>/dev/null | paste -sd, | sed 's/,/, /g')"; \
	exit $$status

## test-batch: what `make test` runs beside the integration lanes, niced: the Rust tests
## (build, then run), the three engine checks and the Python unit tests, at once
test-batch: venv-test
	@nice -n $(BATCH_NICE) $(MAKE) --no-print-directory -k -j5 --output-sync=target \
	  test-rust-run $(ENGINE_CHECK_TARGETS) test-python-unit

## test-rust-run: the Rust tests of the workspace, built and run (test-rust without the
## engine checks)
test-rust-run: test-build
	$(RUST_TEST)

## test-rust: every Rust test of the workspace once, in the `checks` profile (Cargo.toml):
## release's optimisation with integer overflow traps and debug assertions, without
## release's LTO and single codegen unit, which cost most of a release test build
## (each test binary linked with thin LTO) and change no result. It replaces the
## release test run and the engine's second run in the debug profile: every test runs
## with the traps, the checksum kernels and full property-test cases included.
##
## The lab's binaries the Python tests run (offlab-fwd, offlab-udpload) come from the
## same profile (TEST_BINARIES): the tests assert behaviour, never a speed, and their
## build shares every dependency with the test build, where a release build (thin LTO,
## one codegen unit) cost ~2 min of CPU more on a fresh clone. The demo and the
## benchmarks run release builds.
TEST_BINARIES := $(CURDIR)/target/checks
# without make's MAKEFLAGS and MFLAGS when a parallel make runs it (test-batch): they name
# a jobserver the recipe cannot reach, and rustdoc warned so for every crate's doc-tests
RUST_TEST = env -u MAKEFLAGS -u MFLAGS $(CARGO) test --profile checks --workspace --no-fail-fast
test-rust: test-rust-run
	$(MAKE) --no-print-directory test-engine-checks

## test-build: the Rust tests and the lab's binaries built in the checks profile, run nothing
test-build: test-binaries
	$(CARGO) test --profile checks --workspace --no-run --quiet

## test-binaries: the lab's binaries the Python tests run (TEST_BINARIES), checks profile
test-binaries:
	$(CARGO) build --profile checks --quiet -p offlab-fwd -p offlab-udpload

## test-engine-checks: Miri over chosen GSO/GRO unit tests that reach
## unsafe code and over the C library's allocator hook, a short fuzz smoke of every
## target (no sanitizer: ASan is `make fuzz`'s), and the MSRV check. engine-tools (part of
## `make setup-test`) installs Miri,
## cargo-fuzz and the MSRV toolchain; where one could not be installed its check
## prints a one-line skip.
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_SMOKE_SECONDS ?= 3

## engine-tools: what test-engine-checks needs beyond stable Rust: nightly with Miri
## (and its sysroot), cargo-fuzz $(CARGO_FUZZ_VERSION), the MSRV toolchain. Each is
## installed only when missing (a second run takes about a second); one that cannot be
## installed (no network) prints one line, and its check prints its skip line.
## cargo-fuzz is installed unoptimised (--debug): it only drives cargo and libFuzzer, and
## its debug build took 48 s of CPU against 78 s for the release one.
engine-tools:
	@$(CARGO) +nightly miri --version >/dev/null 2>&1 || { \
	  echo "installing: nightly rust with miri, rust-src"; \
	  rustup toolchain install nightly --profile minimal --component miri,rust-src >/dev/null 2>&1 \
	  && $(CARGO) +nightly miri setup >/dev/null 2>&1 \
	  || echo "engine-tools: could not install Miri (rustup toolchain install nightly --component miri,rust-src)"; }
	@$(CARGO) +nightly fuzz --version >/dev/null 2>&1 || { \
	  echo "installing: cargo-fuzz $(CARGO_FUZZ_VERSION)"; \
	  $(CARGO) install --debug --locked --quiet cargo-fuzz --version $(CARGO_FUZZ_VERSION) >/dev/null 2>&1 \
	  || echo "engine-tools: could not install cargo-fuzz (cargo install --locked cargo-fuzz --version $(CARGO_FUZZ_VERSION))"; }
	@rustup run $(MSRV) cargo --version >/dev/null 2>&1 || { \
	  echo "installing: rust $(MSRV) (the MSRV)"; \
	  rustup toolchain install $(MSRV) --profile minimal >/dev/null 2>&1 \
	  || echo "engine-tools: could not install rust $(MSRV) (rustup toolchain install $(MSRV) --profile minimal)"; }

# Miri interprets about a million times slower than native code, so it runs a chosen
# set: unit tests that go through gso/fast.rs (the TCP fast path's header stores),
# gso/output.rs (headers written into uninitialised output), gro/fast.rs (the SSE2
# masked compare, reached by every merge of plain TCP) and a tunnel path, each a few
# seconds under Miri. Left out: the property tests and the tests that push 64 KiB runs
# or hundreds of frames (one to several minutes each under Miri). The SIMD checksum
# kernels are not reached: Miri reports no CPU features, so dispatch takes the portable
# kernel, the reference the SIMD ones are tested against for every length 0..9001.
MIRI_ENGINE_TESTS := gso::tests::tcp::ip_id_increments gso::tests::tcp::fixed_ip_id_keeps_every_id \
  gso::tests::tcp::partial_checksum_is_the_pseudo_header_seed gso::tests::tcp::header_only_packet_gives_one_segment \
  gso::tests::tcp::vlan_tag_and_ipv4_options_are_repeated gso::tests::tunnel::geneve_with_options \
  gso::tests::refusals::layout_of_another_frame_is_refused_without_panic gso::tests::targets:: \
  gro::tests::fast_path::plain_frames_take_the_fast_path gro::tests::rules::ack_differs \
  gro::tests::rules::contiguous_segments_merge_into_one_checksum_partial_packet \
  gro::tests::rules::ipv6_segments_merge gro::tests::rules::psh_mid_run_ends_the_run
# The allocator hook's global allocator keeps a tag in front of each block, a pattern
# Stacked Borrows cannot express (a Box's pointer loses the bytes outside the Box:
# rust-lang/unsafe-code-guidelines#256 and #402, miri#2104), so these run under Tree
# Borrows, the model Miri's authors point such allocators to. The bulk GSO read
# (gso_bulk) and the one-call segmenting (gso_segment_bulk, ABI 1.4) write headers
# through caller pointers: their small cases run here too, and so does the GRO burst
# push's, whose verdicts and reasons go through caller pointers in one of four loops
# (bad_input: each pair of arrays given or not).
MIRI_CAPI_TESTS := the_size_field_is_checked growth_allocations_inside_a_call_all_go_to_the_hook \
  a_hook_returning_null_gives_a_clean_error \
  bulk_read_of_a_small_chain_matches_one_by_one bulk_refusals_write_nothing \
  segment_bulk_of_a_small_chain_matches_flat_and_chained segment_bulk_refusals_write_nothing \
  after_segment_bulk_the_handle_describes_what_it_keeps \
  gro_burst_gives_the_same_result_whichever_arrays_are_given
ENGINE_CHECKS_DIR := target/engine-checks
## The three checks run at once, each in its own target directory (Miri's, the fuzz
## projects', the MSRV check's): Miri interprets on one core and the fuzz smoke runs one
## target at a time, so one after the other they left a core idle for minutes. Each
## writes its line to its own file; `make test` prints them in this order.
## Each check's cargo runs without make's MAKEFLAGS and MFLAGS: they named a jobserver
## a recipe cannot reach, and cargo warned so on every call; each cargo counts its own jobs.
ENGINE_CHECKS := miri fuzz msrv
ENGINE_CHECK_TARGETS := $(addprefix engine-check-,$(ENGINE_CHECKS))
test-engine-checks: engine-tools
	@$(MAKE) --no-print-directory -j3 --output-sync=target $(ENGINE_CHECK_TARGETS)

# a check's line of an earlier run goes first, so a check that fails leaves none
ENGINE_CHECK_RESET = mkdir -p $(ENGINE_CHECKS_DIR) && rm -f $(ENGINE_CHECKS_DIR)/$(@:engine-check-%=%).txt

# each check after engine-tools (a second when all is installed): a check whose tool
# could not be installed prints its skip line
$(ENGINE_CHECK_TARGETS): | engine-tools

engine-check-miri:
	@$(ENGINE_CHECK_RESET)
	@unset MAKEFLAGS MFLAGS; if $(CARGO) +nightly miri --version >/dev/null 2>&1; then \
	  PROPTEST_CASES=2 MIRIFLAGS=-Zmiri-disable-isolation $(CARGO) +nightly miri test -p offlab-engine --lib --quiet -- $(MIRI_ENGINE_TESTS) && \
	  MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows" $(CARGO) +nightly miri test -p offlab-engine-capi --test allocator --test gso_bulk --test gso_segment_bulk --test bad_input --quiet -- $(MIRI_CAPI_TESTS) && \
	  echo "miri ran" > $(ENGINE_CHECKS_DIR)/miri.txt; \
	else echo "miri: skipped (cargo +nightly miri is not installed: make engine-tools)" | tee $(ENGINE_CHECKS_DIR)/miri.txt; fi

engine-check-fuzz:
	@$(ENGINE_CHECK_RESET)
	@unset MAKEFLAGS MFLAGS; if $(CARGO) +nightly fuzz --version >/dev/null 2>&1; then \
	  set -o pipefail; scripts/fuzz.sh --smoke $(FUZZ_SMOKE_SECONDS) | tee target/fuzz-smoke.txt && \
	  sed -n 's/^fuzz smoke: \([0-9]*\) targets.*/fuzz smoke ran (\1 targets)/p' target/fuzz-smoke.txt > $(ENGINE_CHECKS_DIR)/fuzz.txt; \
	else echo "fuzz smoke: skipped (cargo-fuzz on nightly is not installed: make engine-tools)" | tee $(ENGINE_CHECKS_DIR)/fuzz.txt; fi

engine-check-msrv:
	@$(ENGINE_CHECK_RESET)
	@unset MAKEFLAGS MFLAGS; if rustup run $(MSRV) cargo --version >/dev/null 2>&1; then \
	  $(CARGO) +$(MSRV) check -p offlab-engine -p offlab-engine-capi --quiet && echo "msrv $(MSRV) ran" | tee $(ENGINE_CHECKS_DIR)/msrv.txt; \
	else echo "msrv $(MSRV): skipped (toolchain not installed: make engine-tools)" | tee $(ENGINE_CHECKS_DIR)/msrv.txt; fi

## install: the C library (static, and shared with its SONAME and symbol versions), its header and a
## pkg-config file under PREFIX (default /usr/local); DESTDIR for staging
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
install:
	@case "$(PREFIX)" in /*) ;; *) echo "make install: PREFIX must be an absolute path (got '$(PREFIX)')" >&2; exit 2;; esac
	@$(MAKE) --no-print-directory capi-so
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 644 crates/capi/include/offlab_engine.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 target/release/libofflab_engine_c.a $(DESTDIR)$(LIBDIR)/
	install -m 755 target/release/$(CAPI_SO) $(DESTDIR)$(LIBDIR)/$(CAPI_SO)
	ln -sf $(CAPI_SO) $(DESTDIR)$(LIBDIR)/$(CAPI_SONAME)
	ln -sf $(CAPI_SONAME) $(DESTDIR)$(LIBDIR)/libofflab_engine_c.so
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(CAPI_VERSION)|' \
	  crates/capi/offlab-engine.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/offlab-engine.pc
	@echo "installed under $(DESTDIR)$(PREFIX): cc app.c \$$(pkg-config --cflags --libs offlab-engine)"

## test-python: the unit tests in TEST_WORKERS pytest-xdist workers at once (mostly
## CPU spent starting `offlab`; each worker its own lab instance, tests/conftest.py),
## then the integration tests in two lanes at once, one pytest for the tests over the
## SSH rigs and one for the lab's own runs (tests/integration/conftest.py: much of
## their time is waiting on a watchdog, an SSH round trip or a guest's boot; each
## lane's output is printed whole when both end), then the measuring ones (`alone`)
## with nothing beside them. Each prints its slowest tests, so every run shows where
## the time goes. First the layer contract (pyproject.toml,
## [tool.importlinter]): the lab's wings import downwards only and no wing's modules import in a
## circle (docs/lab.md); a broken
## one prints each upward import and one line saying so.
TEST_WORKERS ?= 2
TEST_LANES := target/test-lanes
test-python: test-python-unit test-python-integration

# test-rust's binaries when it built them (make test), else the lab's usual search
TEST_BINARY_ENV = for bin in offlab-fwd:OFFLAB_FWD offlab-udpload:OFFLAB_UDPLOAD; do \
	  [ -x $(TEST_BINARIES)/$${bin%:*} ] && export $${bin\#*:}=$(TEST_BINARIES)/$${bin%:*}; \
	done

test-python-unit: venv-test
	@out=$$($(VENV)/bin/lint-imports --no-cache 2>&1) || { \
	  grep -E 'is not allowed to import|No cycles are allowed|^- ' <<<"$$out"; \
	  echo "layer contract broken: an import runs up the lab's wings or in a circle inside one (pyproject.toml [tool.importlinter], docs/lab.md): move the shared definition down"; \
	  exit 1; }; echo "layer contracts kept: the lab's wings import downwards only, and no wing's modules import each other in a circle"
	$(PY) -m unittest discover -s benches -p 'test_*.py'
	@$(TEST_BINARY_ENV); $(PY) -m pytest -q -n $(TEST_WORKERS) --durations=10 --ignore=tests/integration

# the measuring tests run even when a lane failed, as in `make test`
test-python-integration:
	@status=0; $(MAKE) --no-print-directory test-python-lanes || status=1; \
	$(MAKE) --no-print-directory test-python-alone || status=1; exit $$status

## test-python-lanes: the integration tests' two lanes at once (their output when both end)
test-python-lanes: venv-test guest test-binaries
	@$(TEST_BINARY_ENV); status=0; \
	echo "integration: the rigs and lab lanes at once (their output when both end)"; \
	mkdir -p $(TEST_LANES) && rm -f $(TEST_LANES)/*; \
	for lane in rigs lab; do \
	  (OFFLAB_TEST_LANE=$$lane $(PY) -m pytest -q -p no:cacheprovider -m $$lane --durations=10 tests/integration \
	     > $(TEST_LANES)/$$lane.txt 2>&1; echo $$? > $(TEST_LANES)/$$lane.status) & \
	done; wait; \
	for lane in rigs lab; do \
	  echo "== integration, $$lane lane"; cat $(TEST_LANES)/$$lane.txt; \
	  [ "$$(cat $(TEST_LANES)/$$lane.status)" = 0 ] || status=1; \
	done; \
	exit $$status

## test-python-alone: the integration tests that read a measured figure, with nothing beside them
test-python-alone: venv-test
	@$(TEST_BINARY_ENV); echo "== integration, the measuring tests alone"; \
	$(PY) -m pytest -q -m alone --durations=5 tests/integration

## bench: engine vs DPDK (and the kernel), side by side in one run
bench: setup-test
	@missing=$$(for p in $(BENCH_APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	$(PY) benches/run.py

## fuzz: every cargo-fuzz target (engine, capi) for FUZZ_SECONDS each, or for FUZZ_RUNS
## executions each when that is set; FUZZ_TARGETS="a b" picks targets. Executions are
## logged to <fuzz dir>/runs.log; `scripts/fuzz.sh --summary` sums them (not part of CI)
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_TARGETS ?=
fuzz:
	FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/fuzz.sh $(if $(FUZZ_RUNS),--runs $(FUZZ_RUNS),$(FUZZ_SECONDS))

clean:
	rm -rf target $(VENV) benches/peer/build build/guest
