# offlab — one entry point for every job. `make demo` and `make test` are the two that matter.
SHELL := /bin/bash
.DEFAULT_GOAL := demo

VENV    := .venv
PY      := $(VENV)/bin/python
OFFLAB  := $(VENV)/bin/offlab
CARGO   ?= cargo
APT_PKGS := iperf3 ethtool iproute2 procps util-linux kmod irtt sockperf openssh-client openssh-server \
            qemu-system-x86 binutils cpio xz-utils zstd postgresql
# dpdk-dev ships dpdk-testpmd (W5: testpmd as the vhost-user backend); make test never needs it
BENCH_APT_PKGS := libdpdk-dev dpdk-dev pkg-config valgrind

.PHONY: setup deps venv build guest demo test test-rust test-engine-checks test-python bench fuzz install clean

## setup: system tools (apt), the Python venv with offlab installed, and the Rust build
setup: deps venv build guest

## guest: the lab's QEMU guest (kernel + initramfs from Debian packages, docs/vms.md),
## rebuilt when its recipe changes; `make guest GUEST_FORCE=1` rebuilds it anyway
## (e.g. to pick up a newer kernel from apt)
GUEST_DIR := build/guest
GUEST_INPUTS := guest/build.sh guest/init.sh guest/agent.sh guest/packages guest/modules
ifdef GUEST_FORCE
.PHONY: $(GUEST_DIR)/manifest.txt
endif
$(GUEST_DIR)/manifest.txt: $(GUEST_INPUTS) | deps
	guest/build.sh $(GUEST_DIR)

guest: $(GUEST_DIR)/manifest.txt

deps:
	@missing=$$(for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

build:
	$(CARGO) build --release --workspace --quiet

## demo: install what is missing, build, run the quick plan, write the report
demo: setup
	$(OFFLAB) run --plan quick

## test: every test (Rust unit/property/kernel-differential, Python unit/integration)
test: setup test-rust test-python

test-rust:
	$(CARGO) test --release --workspace --no-fail-fast
	$(MAKE) --no-print-directory test-engine-checks

## test-engine-checks: the engine's unit and property tests once more in the debug
## profile (integer overflow traps), Miri over the GSO/GRO unit tests that reach unsafe
## code, a short fuzz smoke of every target, and the MSRV build. Miri, cargo-fuzz and
## the MSRV toolchain are used where installed (a fresh machine cannot be assumed to
## download toolchains); each missing one prints a one-line skip.
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
FUZZ_SMOKE_SECONDS ?= 3
MIRI_TESTS := gso::tests:: gro::tests::rules:: gro::tests::fast_path:: gro::tests::table_udp_refusals::
test-engine-checks:
	@# checksum:: is skipped here: its exhaustive kernel-vs-reference tests take minutes
	@# unoptimised, and the release run above already covers them.
	PROPTEST_CASES=32 $(CARGO) test -p offlab-engine --lib --test gro_props --test gso_props --test fuzz_regressions --quiet -- --skip checksum::
	@if $(CARGO) +nightly miri --version >/dev/null 2>&1; then \
	  PROPTEST_CASES=2 MIRIFLAGS=-Zmiri-disable-isolation $(CARGO) +nightly miri test -p offlab-engine --lib --quiet -- $(MIRI_TESTS); \
	else echo "miri: skipped (cargo +nightly miri is not installed: rustup +nightly component add miri)"; fi
	@if $(CARGO) +nightly fuzz --version >/dev/null 2>&1; then \
	  scripts/fuzz.sh --smoke $(FUZZ_SMOKE_SECONDS); \
	else echo "fuzz smoke: skipped (cargo-fuzz on nightly is not installed: cargo install cargo-fuzz)"; fi
	@if rustup run $(MSRV) cargo --version >/dev/null 2>&1; then \
	  $(CARGO) +$(MSRV) check -p offlab-engine -p offlab-engine-capi --quiet && echo "msrv $(MSRV): ok"; \
	else echo "msrv $(MSRV): skipped (toolchain not installed: rustup toolchain install $(MSRV))"; fi

## install: the C library (static, and shared with its SONAME), its header and a
## pkg-config file under PREFIX (default /usr/local); DESTDIR for staging
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
CAPI_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' crates/capi/Cargo.toml)
CAPI_ABI := $(shell sed -n 's/^pub const OFL_ABI_MAJOR: u32 = \([0-9]*\);/\1/p' crates/capi/src/lib.rs)
install:
	@case "$(PREFIX)" in /*) ;; *) echo "make install: PREFIX must be an absolute path (got '$(PREFIX)')" >&2; exit 2;; esac
	$(CARGO) build --release -p offlab-engine-capi --quiet
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 644 crates/capi/include/offlab_engine.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 target/release/libofflab_engine_c.a $(DESTDIR)$(LIBDIR)/
	install -m 755 target/release/libofflab_engine_c.so $(DESTDIR)$(LIBDIR)/libofflab_engine_c.so.$(CAPI_VERSION)
	ln -sf libofflab_engine_c.so.$(CAPI_VERSION) $(DESTDIR)$(LIBDIR)/libofflab_engine_c.so.$(CAPI_ABI)
	ln -sf libofflab_engine_c.so.$(CAPI_ABI) $(DESTDIR)$(LIBDIR)/libofflab_engine_c.so
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(CAPI_VERSION)|' \
	  crates/capi/offlab-engine.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/offlab-engine.pc
	@echo "installed under $(DESTDIR)$(PREFIX): cc app.c \$$(pkg-config --cflags --libs offlab-engine)"

## test-python: the unit tests in TEST_WORKERS pytest-xdist workers at once (mostly
## CPU spent starting `offlab`; each worker its own lab instance, tests/conftest.py),
## then the integration tests alone (namespaces, rigs, QEMU: they measure, so nothing
## runs beside them). Both always run; each prints its slowest tests, so every run
## shows where the time goes.
TEST_WORKERS ?= 2
test-python:
	$(PY) -m unittest discover -s benches -p 'test_*.py'
	status=0; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=15 --ignore=tests/integration || status=1; \
	$(PY) -m pytest -q --durations=30 tests/integration || status=1; \
	exit $$status

## bench: engine vs DPDK (and the kernel), side by side in one run
bench: setup
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
