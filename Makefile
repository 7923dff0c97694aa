# offlab — one entry point for every job. `make demo` and `make test` are the two that matter.
SHELL := /bin/bash
.DEFAULT_GOAL := demo

VENV    := .venv
PY      := $(VENV)/bin/python
OFFLAB  := $(VENV)/bin/offlab
CARGO   ?= cargo
APT_PKGS := iperf3 ethtool iproute2 procps util-linux kmod irtt sockperf openssh-client openssh-server \
            qemu-system-x86 binutils cpio xz-utils zstd postgresql
BENCH_APT_PKGS := libdpdk-dev pkg-config valgrind

.PHONY: setup deps venv build guest demo test test-rust test-python bench fuzz clean

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

test-python:
	$(PY) -m unittest discover -s benches -p 'test_*.py'
	$(PY) -m pytest -q

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
