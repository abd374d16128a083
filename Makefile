# The two jobs, each setting itself up on a fresh machine:
#   make bench   the benchmarks on the default torch (the main job; `make bench-evidence`
#                writes the same run into the committed bench/results/)
#   make test    the test suite on every supported torch (or: make test TORCH=2.14.1)
# Environments live in .venv/torch-<version>/ inside the checkout; `make clean` removes them.
# PYTHON=... picks another CPython, a free-threaded one included (its environments live in
# .venv/<tag>/, e.g. .venv/cp313t/); `make test-freethreaded` builds one if needed.
# `make help` lists every target.

DEFAULT_PYTHON := python3
PYTHON         ?= $(DEFAULT_PYTHON)
# The interpreter's wheel tag: cp311, cp313t (t: free-threaded, Py_GIL_DISABLED), ...
PYTAG := $(shell $(PYTHON) -c 'import sys, sysconfig; print("cp%d%d%s" % (sys.version_info[:2] + \
           ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "",)))' 2>/dev/null)
ifeq ($(PYTAG),)
$(error PYTHON=$(PYTHON) is not a working CPython interpreter)
endif
# The torch releases `make test` runs, per interpreter: those with wheels for it. Free-threaded
# 3.13 wheels (cp313t) stop at torch 2.12; 2.13+ ship cp314t instead.
TORCH_VERSIONS_cp313t := 2.12.0
TORCH_VERSIONS := $(or $(TORCH_VERSIONS_$(PYTAG)),2.15.0 2.14.1 2.13.0)
# The default torch: the newest release there is for PYTHON. TORCH=... picks another.
TORCH          ?= $(firstword $(TORCH_VERSIONS))
# `make test` runs every version unless TORCH was given on the command line.
TEST_TORCH     := $(if $(filter command line,$(origin TORCH)),$(TORCH),$(TORCH_VERSIONS))
# Per-interpreter pins, added to each environment's constraints: free-threaded 3.13 gets no
# cffi (it cannot build there; setup.py builds the same shim_ext sources with setuptools'
# own Extension instead, and says why), and a hypothesis
# with a pure-Python wheel (newer ones ship abi3 wheels that 3.13t cannot use, and an sdist
# that needs crates.io).
NO_CFFI_cp313t := 1
PINS_cp313t    := hypothesis<6.156

# The default interpreter keeps .venv/torch-<version>; any other gets its own directory.
VENVS    := .venv$(if $(filter $(DEFAULT_PYTHON),$(PYTHON)),,/$(PYTAG))
env       = $(VENVS)/torch-$(1)
# -P: never import bridge/ from the source tree, which holds no compiled module;
# the package under test is the one built into the environment.
py        = $(call env,$(1))/bin/python -P
SOURCES  := pyproject.toml setup.py $(wildcard bridge/*.py bridge/*.pyx bridge/*.pxd bridge/*.pxi bridge/*.h shim_ext/*.py shim_ext/include/torch_borrow/*.pxd \
            shim_ext/*.c shim_ext/*.cpp shim_ext/include/torch_borrow/*.h \
            shim_ext/include/torch_borrow/prototype/*.h)
BUILD_DEPS := "cython>=3.1" $(if $(NO_CFFI_$(PYTAG)),,"cffi>=1.17") "setuptools>=77" wheel packaging
# Quiet pip, but keep its errors; the local-index warnings of this machine are noise.
PIP_QUIET := 2>&1 | { grep -v '^WARNING: Location' || true; }

SHELL := /bin/bash
# The environment stamps are made by pattern rules; keep them (never "intermediate").
.SECONDARY:

.PHONY: help bench bench-evidence bench-quick bench-report callgrind test test-devmode memcheck \
        survey info clean patch-check test-freethreaded cpython-ft \
        $(addprefix test-,$(sort $(TORCH_VERSIONS) $(TEST_TORCH)))
.DEFAULT_GOAL := help

help:  ## list the targets
	@echo "The two commands (each sets itself up on a fresh machine):"
	@echo "  make bench   the benchmark evidence on the default torch (the main job)"
	@echo "  make test    the test suite on every supported torch"
	@echo "Targets marked * create a virtual environment of several GB per torch (.venv/,"
	@echo "once; make clean removes them). All targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 19 | \
	  sed -E 's/^((bench|bench-evidence|bench-quick|bench-report|callgrind|test|patch-check|info|test-devmode|memcheck|survey|test-freethreaded|test-pythons|race-survey|bench-freethreaded|bench-freethreaded-quick|envs-ahead|test-bench|coverage|rfc|rfc-check|callgrind-consumers|callgrind-consumer|dist-header) )/* \1/; t; s/^/  /'

# --- environments ------------------------------------------------------------------------
# pyproject's optional-dependency group $(2), read by environment $(1)'s python.
extras = $$($(call env,$(1))/bin/python -c "import tomllib; print(' '.join(\
	    tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['$(2)']))")

# One virtual environment per torch version. PIP_CONSTRAINT pins torch to exactly that
# version and replaces any machine-wide pip constraint (which may cap torch lower). The
# test extra comes here, with pip's build isolation: what has no wheel for PYTHON (numpy on
# cp313t) builds from source with its own build requirements (the .built step cannot).
# Free-threaded 3.13 gets no cffi: setup.py builds shim_ext there with setuptools' Extension.
# Two makes may ask for one environment at once (CI makes the later ones in the
# background): the lock makes the second wait, then find it made.
$(VENVS)/torch-%/.ready:
	@mkdir -p $(VENVS)
	@flock $(VENVS)/.torch-$*.lock $(MAKE) --no-print-directory make-env-$* VENV_DIR=$(call env,$*)

# The creation itself, under that lock (nothing to do if another make finished it).
make-env-%:
	@test ! -e $(VENV_DIR)/.ready || exit 0; \
	echo ">>> creating $(VENV_DIR) (torch $*, $(PYTAG); several GB on first use, then pip's cache)"; \
	set -e -o pipefail; $(PYTHON) -m venv $(VENV_DIR); \
	printf '%s\n' "torch==$*" $(foreach pin,$(PINS_$(PYTAG)),"$(pin)") > $(VENV_DIR)/constraints.txt; \
	PIP_CONSTRAINT=$(CURDIR)/$(VENV_DIR)/constraints.txt \
	  $(VENV_DIR)/bin/pip install -q --disable-pip-version-check "torch==$*" $(BUILD_DEPS) \
	  $(call extras,$*,test) $(PIP_QUIET); \
	$(share_files); \
	touch $(VENV_DIR)/.ready

# Environments share their identical large files as hard links: the CUDA libraries every
# torch wheel pulls in, and torch's and triton's libraries across CPython versions (about
# a third of the disk of all of CI's environments). pip removes a file before it writes a
# new one in its place, so an install into one environment never writes through into
# another; each environment's lock is held while files are compared, so none is half-written.
# Only torch/, triton/ and nvidia/ are shared (torch and the CUDA wheels it pulls in). Needs
# util-linux's hardlink; without it, nothing is shared.
share_files = if command -v hardlink > /dev/null; then \
	  shopt -s nullglob; dirs=(); declare -A seen; \
	  for d in $(VENV_DIR)/ .venv/torch-*/ .venv/*/torch-*/; do \
	    [[ -z $${seen[$$d]} && ( $$d == $(VENV_DIR)/ || -e $${d}.ready ) ]] || continue; seen[$$d]=1; \
	    exec {fd}> $${d}.lock; flock $$fd; \
	    dirs+=($${d}lib/python*/site-packages/{torch,triton,nvidia}); \
	  done; \
	  hardlink -t -s 1M "$${dirs[@]}" | sed -n 's/^Saved: */>>> shared with the other environments: /p' \
	    || echo ">>> sharing files with the other environments failed (each keeps its own copy)"; \
	fi

# The build: the cffi shim against this torch's headers, and the Cython bridge. flock
# keeps two makes that share a checkout from installing into one environment at once, and
# from building at once at all (the build writes into the checkout: bridge/_bridge.c,
# *.egg-info); creating environments (.ready, downloads) may overlap.
# Then the one setting of the import path: a .pth in site-packages that appends the
# current directory after site-packages when it is a checkout's root (bench/ and tests/
# there), so `python -P -m bench` and the tests import the benchmark package from the
# checkout they run from, whichever clone built the environment, while `bridge` stays
# the installed build.
$(VENVS)/torch-%/.built: $(VENVS)/torch-%/.ready $(SOURCES)
	@echo ">>> building shim_ext and bridge against torch $* (about 1.5 min)"
	@mkdir -p build
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock build/.build.lock flock $(call env,$*)/.lock \
	  $(call env,$*)/bin/pip install -q --disable-pip-version-check --no-build-isolation \
	  ".[test]" $(PIP_QUIET)
	@cp bench/checkout.pth "$$($(call env,$*)/bin/python -c \
	  'import sysconfig; print(sysconfig.get_path("purelib"))')/torch_borrow_bridge_checkout.pth"
	@touch $@

# The benchmarks' own needs (pyproject's `bench` extra), only where benchmarks run.
$(VENVS)/torch-%/.bench: $(VENVS)/torch-%/.built pyproject.toml
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock $(call env,$*)/.lock $(call env,$*)/bin/pip install -q --disable-pip-version-check \
	  $(call extras,$*,bench) $(PIP_QUIET)
	@touch $@

# The patch check's own needs (pyproject's `patch` extra), in the torch 2.15.0 environment.
$(VENVS)/torch-%/.patch: $(VENVS)/torch-%/.built pyproject.toml
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock $(call env,$*)/.lock $(call env,$*)/bin/pip install -q --disable-pip-version-check \
	  $(call extras,$*,patch) $(PIP_QUIET)
	@touch $@

# --- the jobs ----------------------------------------------------------------------------
# `make bench` writes into the git-ignored bench/results/scratch/, so running it never
# changes a tracked file; `make bench-evidence` (the same run) refreshes the committed
# evidence in bench/results/. BENCH_OUT=DIR picks another folder for bench and bench-report.
BENCH_OUT ?= bench/results/scratch
# Result files name the interpreter too when it is not the default one (as the
# environments do): bench-torch-2.15.0.*, bench-cp313-torch-2.15.0.*, callgrind-... alike.
RESULT_TAG := $(if $(filter $(DEFAULT_PYTHON),$(PYTHON)),,$(PYTAG)-)
bench: $(VENVS)/torch-$(TORCH)/.bench  ## benchmarks on the default torch (TORCH=...) into bench/results/scratch/
	$(call py,$(TORCH)) -m bench --out $(BENCH_OUT) --stem bench-$(RESULT_TAG)torch-$(TORCH)

# The evidence takes every table from EVIDENCE_PROCESSES fresh processes (the routes'
# order shuffled per process, the spread between them reported), EVIDENCE_ROUNDS rounds
# each (the protocol's 30; fewer rounds fit a busier machine).
EVIDENCE_PROCESSES ?= 5
EVIDENCE_ROUNDS ?= 30
bench-evidence: $(VENVS)/torch-$(TORCH)/.bench  ## the same run from 5 fresh processes, refreshing the committed bench/results/ (quiet machine)
	$(call py,$(TORCH)) -m bench --out bench/results --stem bench-$(RESULT_TAG)torch-$(TORCH) \
	  --processes $(EVIDENCE_PROCESSES) --rounds $(EVIDENCE_ROUNDS)

bench-quick: $(VENVS)/torch-$(TORCH)/.bench  ## every benchmark briefly (what CI runs)
	$(call py,$(TORCH)) -m bench --quick --out bench/results/scratch \
	  --stem bench-$(RESULT_TAG)torch-$(TORCH)

bench-report: $(VENVS)/torch-$(TORCH)/.bench  ## redo tables and chart from the saved JSON in BENCH_OUT (default scratch)
	$(call py,$(TORCH)) -m bench.report $(BENCH_OUT)/bench-$(RESULT_TAG)torch-$(TORCH).json \
	  --md $(BENCH_OUT)/bench-$(RESULT_TAG)torch-$(TORCH).md \
	  --chart $(BENCH_OUT)/bench-$(RESULT_TAG)torch-$(TORCH).svg

# Instruction counts (valgrind's callgrind): deterministic, whatever the machine's load,
# so they are committed as they come out. The goals' instruction column of the
# benchmark report comes from the JSON this writes beside the markdown.
callgrind: $(VENVS)/torch-$(TORCH)/.built  ## instructions per call of every route (by part), path and goal -> bench/results/callgrind-torch-<v>.{md,json}
	$(call py,$(TORCH)) -m bench.callgrind --out bench/results --stem callgrind-$(RESULT_TAG)torch-$(TORCH)
	$(call py,$(TORCH)) -m bench.c_shims.callgrind --out bench/results \
	  --stem callgrind-c-shims-$(RESULT_TAG)torch-$(TORCH)

# Each real consumer (cuda.core's tensor bridge, tvm-ffi, a private-unpack launcher) on the
# route it takes, today and with each patch, counted by callgrind (bench/consumers.py):
# committed as it comes out, for each CPython (PYTHON=...); the RFC's consumers table.
# The header-only release of torch_borrow/consumer.h: the headers it includes, the .pxd,
# the examples and a README with the version policy, in one reproducible tarball.
.PHONY: dist-header
dist-header:  ## the consumer header as a versioned tarball to vendor -> build/dist/torch-borrow-consumer-<version>.tar.gz
	$(PYTHON) shim_ext/dist_header.py --out build/dist

# The consumer on torch_borrow/consumer.h, each route's read beside torch's DLPack exchange
# API alone, one tensor and in rotation over 64 distinct float32 / complex64 tensors
# (bench/consumer_header.py): committed per torch (TORCH=...) and CPython (PYTHON=...).
.PHONY: callgrind-consumer
callgrind-consumer: $(VENVS)/torch-$(TORCH)/.bench  ## consumer.h's routes vs the DLPack exchange API, counted -> bench/results/callgrind-consumer-torch-<v>.{md,json}
	$(call py,$(TORCH)) -m bench.consumer_header --out bench/results

.PHONY: callgrind-consumers
callgrind-consumers: $(VENVS)/torch-$(TORCH)/.bench  ## each real consumer on its own route, today and with each patch -> bench/results/consumers-torch-<v>.{md,json}
	$(call py,$(TORCH)) -m bench.consumers --out bench/results --stem consumers-$(RESULT_TAG)torch-$(TORCH)

# ATen ops called from C through torch's generated C shims on tensors from Python,
# input handles owned / owned + interpreter fix / borrowed (bench/c_shims/):
# the instruction counts (committed as they come out), then the timed run into
# bench/results/ (a quiet machine), which renders both into one report.
.PHONY: callgrind-c-shims bench-c-shims bench-c-shims-quick findings-c-shims
callgrind-c-shims: $(VENVS)/torch-$(TORCH)/.built  ## instructions per call of the C-shim consumer -> bench/results/callgrind-c-shims-torch-<v>.{md,json}
	$(call py,$(TORCH)) -m bench.c_shims.callgrind --out bench/results \
	  --stem callgrind-c-shims-$(RESULT_TAG)torch-$(TORCH)

bench-c-shims: $(VENVS)/torch-$(TORCH)/.bench  ## the C-shim consumer timed, from 5 fresh processes -> bench/results/c-shims-torch-<v>.{md,json} (quiet machine)
	$(call py,$(TORCH)) -m bench.c_shims.run --out bench/results \
	  --processes $(EVIDENCE_PROCESSES) --rounds $(EVIDENCE_ROUNDS) \
	  --stem c-shims-$(RESULT_TAG)torch-$(TORCH) \
	  $(if $(wildcard bench/results/callgrind-c-shims-$(RESULT_TAG)torch-$(TORCH).json),\
	  --callgrind bench/results/callgrind-c-shims-$(RESULT_TAG)torch-$(TORCH).json)

bench-c-shims-quick: $(VENVS)/torch-$(TORCH)/.bench  ## the same briefly, into bench/results/scratch/
	$(call py,$(TORCH)) -m bench.c_shims.run --quick --out bench/results/scratch

findings-c-shims: $(VENVS)/torch-$(TORCH)/.bench  ## proposal/findings/c-shims.md from the committed bench/results/*c-shims*
	PYTHONPATH=tests $(call py,$(TORCH)) -m findings.c_shims --torch $(TORCH)

test: $(addprefix test-,$(TEST_TORCH))  ## the suite on torch 2.15.0, 2.14.1 and 2.13.0 (or TORCH=..., PYTHON=...)

# The suite runs in PYTEST_JOBS worker processes (pytest-xdist; 0: in this process): one
# per core, at most 4 (each imports torch, about 0.8 GB). Most of its time is child
# processes and compilers, which workers overlap; test times differ by a thousandfold, so
# an idle worker steals queued tests (worksteal). PYTHONSAFEPATH keeps the workers, which
# pytest-xdist starts without -P, off the source tree's bridge/ too.
PYTEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
# The product's suite is tests/ without tests/bench/: the benchmark tools' and the
# emulated fixes' tests build the benchmarks' C++ (minutes a run) and need the bench
# extra, so `make test-bench` runs them once, on the default torch. $(2): the paths to
# run instead; PYTEST_ARGS naming a path under tests/ runs that path instead too.
SUITE     := tests --ignore=tests/bench
pytest     = PYTHONSAFEPATH=1 $(call py,$(1)) -m pytest -n $(PYTEST_JOBS) --dist worksteal \
             $(if $(2)$(filter tests/%,$(PYTEST_ARGS)),$(2),$(SUITE)) $(PYTEST_ARGS)

$(addprefix test-,$(sort $(TORCH_VERSIONS) $(TEST_TORCH))): test-%: $(VENVS)/torch-%/.built
	@echo ">>> tests on torch $* ($(PYTAG))"
	$(call pytest,$*)

.PHONY: test-bench
test-bench: $(VENVS)/torch-$(TORCH)/.bench  ## the benchmark tools' and emulated fixes' tests (tests/bench/), once, on the default torch
	@echo ">>> benchmark tests on torch $(TORCH) ($(PYTAG))"
	$(call pytest,$(TORCH),tests/bench)

# The patches' base takes headers from the torch 2.15.0 wheel, so this always runs there.
# Its output also goes to PATCH_CHECK_LOG, committed, so a reader sees what ran.
PATCH_CHECK_LOG ?= proposal/patch-check.log
patch-check: $(VENVS)/torch-2.15.0/.patch  ## apply the patches to PyTorch's base, compile, nm, build + run their tests, upstream's linters (log: proposal/patch-check.log)
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,2.15.0)/constraints.txt \
	  flock $(call env,2.15.0)/.lock $(call env,2.15.0)/bin/pip install -q \
	  --disable-pip-version-check clang-tidy==17.0.1 $(PIP_QUIET)
	@dpkg -s libgtest-dev >/dev/null 2>&1 || { apt-get update -qq && \
	  apt-get install -y -qq libgtest-dev=1.12.1-0.2 >/dev/null; }
	set -o pipefail; $(call py,2.15.0) proposal/tools/patch_check.py 2>&1 | tee $(PATCH_CHECK_LOG)

# The RFC's and the appendix's figures, computed from the committed JSON (never typed by
# hand); its intervals are the benchmark reports' bootstrap (proposal/stats.py: numpy and
# scipy), so it runs in the benchmark environment.
.PHONY: rfc rfc-check
rfc: $(VENVS)/torch-$(TORCH)/.bench  ## fill proposal/RFC.md and appendix.md's generated blocks from bench/results/ and proposal/findings/
	$(call py,$(TORCH)) proposal/tools/render.py

rfc-check: $(VENVS)/torch-$(TORCH)/.bench  ## exit 1 if proposal/RFC.md or appendix.md is not what make rfc would write
	$(call py,$(TORCH)) proposal/tools/render.py --check

info: $(VENVS)/torch-$(TORCH)/.built  ## what `python -m bridge info` says on TORCH
	$(call py,$(TORCH)) -m bridge info

clean:  ## remove the environments and build directories
	rm -rf $(VENVS) build *.egg-info bridge/_bridge.c .pytest_cache .hypothesis

# --- hardening ---------------------------------------------------------------------------
test-devmode: $(VENVS)/torch-$(TORCH)/.built  ## the suite once in dev mode (PYTHONDEVMODE=1, as -X dev) with PYTHONMALLOC=debug (TORCH=...)
	@echo ">>> tests on torch $(TORCH) in dev mode, debug allocator"
	PYTHONDEVMODE=1 PYTHONMALLOC=debug $(call pytest,$(TORCH))

memcheck: $(VENVS)/torch-$(TORCH)/.built  ## views and hostile inputs under valgrind memcheck; fails on an error in our modules
	$(call py,$(TORCH)) tests/hostile/memcheck.py --python $(call env,$(TORCH))/bin/python

survey: $(VENVS)/torch-2.14.1/.built $(VENVS)/torch-2.15.0/.built  ## torch's own torch_tensor_from_pyobject and DLPack exchange on hostile inputs -> proposal/findings/torch-shim.md
	PYTHONPATH=tests $(call py,2.15.0) -m findings.torch_shim_survey --out proposal/findings/torch-shim.md \
	  --python $(call env,2.14.1)/bin/python --python $(call env,2.15.0)/bin/python

# --- CUDA tensors on a GPU machine -----------------------------------------------------------
.PHONY: gpu-bench
gpu-bench:  ## CUDA parity tests + benchmarks (bench/gpu/run.sh) where a GPU is; else how to run it
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  bench/gpu/run.sh; \
	else \
	  echo "no GPU here. On a GPU machine (Python 3.12, torch, cuda-core; no network needed),"; \
	  echo "from the repository root: OUT=/tmp/gpu-out bench/gpu/run.sh   (--quick: a check)"; \
	  echo "With no cffi/pycparser there, download their cp312 wheels into .whl/ first;"; \
	  echo "bench/README.md (CUDA tensors on a GPU machine) gives every step and what comes out."; \
	fi

# --- free-threaded CPython ------------------------------------------------------------------
# CPython 3.13 built with --disable-gil from Debian's source package into ~/.cache (outside
# the checkout, reused; several minutes of compiling otherwise), then the same targets with it.
CPYTHON_FT := .ci/build-cpython-ft

cpython-ft:  ## build free-threaded CPython 3.13 into ~/.cache if missing; print its path
	$(CPYTHON_FT)

# PYTHON_GIL=0: torch's first meta-device op imports triton (a dependency of the torch 2.12
# wheel), whose extension has not declared free-threading support, so CPython would turn the
# GIL on for the rest of the test process (tests/bridge/test_tables.py makes meta tensors).
# The suite's own checks that torch, shim_ext and the bridge leave the GIL off run in
# children with PYTHON_GIL removed (tests/bridge/test_threads.py), so they still prove it.
test-freethreaded:  ## the suite on free-threaded CPython 3.13 (built if missing) with torch 2.12.0, GIL off
	set -o pipefail; py="$$($(CPYTHON_FT) | tail -n 1)" && \
	  PYTHON_GIL=0 $(MAKE) --no-print-directory test PYTHON="$$py"

# --- other CPython versions with a GIL ------------------------------------------------------
# The suite and the quick benchmarks on the default torch with every other CPython minor
# version this machine has (pyenv's GIL builds, found, not named here: OTHER_PYTHONS=...
# overrides). A version that is not found is said; none found is an error. Each gets its
# own environments under .venv/<tag>/ (built once, then reused; about 5 GB each, less
# where they share files with the default interpreter's, see share_files).
PYENV_ROOT_DIR := $(or $(shell pyenv root 2>/dev/null),$(PYENV_ROOT),$(HOME)/.pyenv)
OTHER_MINORS   ?= 3.12 3.13
find_python     = $(lastword $(sort $(wildcard $(PYENV_ROOT_DIR)/versions/$(1).*[0-9]/bin/python$(1))))
OTHER_PYTHONS  ?= $(strip $(foreach m,$(OTHER_MINORS),$(call find_python,$(m))))
OTHER_TORCH    ?= 2.15.0

.PHONY: test-pythons envs-ahead
# Every environment test-pythons and test-freethreaded use, made without running anything
# (.ci/run makes them in the background while the suite runs: mostly downloads).
envs-ahead:  ## make the environments of make test's other torch versions, test-pythons and test-freethreaded (and the free-threaded CPython)
	set -e; for v in $(filter-out $(TORCH),$(TORCH_VERSIONS)); do \
	  $(MAKE) --no-print-directory env TORCH=$$v; \
	done
	set -e; for py in $(OTHER_PYTHONS); do \
	  $(MAKE) --no-print-directory env-bench PYTHON=$$py TORCH=$(OTHER_TORCH); \
	done
	set -o pipefail; ft="$$($(CPYTHON_FT) | tail -n 1)" && \
	  $(MAKE) --no-print-directory env PYTHON="$$ft" TORCH=$(FT_TORCH)

test-pythons:  ## the suite + bench-quick on torch 2.15.0 with CPython 3.12 and 3.13 (pyenv's; ~5 GB each)
	@for m in $(OTHER_MINORS); do \
	  case " $(OTHER_PYTHONS) " in *"/python$$m "*) ;; \
	    *) echo ">>> CPython $$m: not found under $(or $(PYENV_ROOT_DIR),pyenv's root) (skipped, said)";; esac; \
	done
	@test -n "$(OTHER_PYTHONS)" || { echo "no other CPython found (OTHER_MINORS=$(OTHER_MINORS))" >&2; exit 1; }
	set -e; for py in $(OTHER_PYTHONS); do \
	  echo ">>> $$py ($$($$py -c 'import sys; print(sys.version.split()[0])'))"; \
	  $(MAKE) --no-print-directory test PYTHON=$$py TORCH=$(OTHER_TORCH); \
	  $(MAKE) --no-print-directory bench-quick PYTHON=$$py TORCH=$(OTHER_TORCH); \
	done

# The environment of PYTHON and TORCH, built if needed (env; env-bench: with the bench
# extra), and its interpreter (env-python): the building blocks of the targets below, which
# use two interpreters at once.
.PHONY: env env-bench env-python race-survey bench-freethreaded bench-freethreaded-quick
env: $(VENVS)/torch-$(TORCH)/.built
env-bench: $(VENVS)/torch-$(TORCH)/.bench
env-python:
	@echo "$(CURDIR)/$(call env,$(TORCH))/bin/python"

FT_TORCH   := 2.12.0
GIL_PYTHON ?= $(DEFAULT_PYTHON)
GIL_TORCH  ?= 2.15.0
# Both interpreters' environments, then $(1) with FT / GIL set to their pythons.
with_both = set -e; ft="$$($(CPYTHON_FT) | tail -n 1)"; \
	$(MAKE) --no-print-directory env PYTHON="$$ft" TORCH=$(FT_TORCH); \
	$(MAKE) --no-print-directory env PYTHON="$(GIL_PYTHON)" TORCH=$(GIL_TORCH); \
	FT="$$($(MAKE) -s --no-print-directory env-python PYTHON="$$ft" TORCH=$(FT_TORCH))"; \
	GIL="$$($(MAKE) -s --no-print-directory env-python PYTHON="$(GIL_PYTHON)" TORCH=$(GIL_TORCH))"; \
	$(1)

# RACE_ARGS=... passes options to the survey (e.g. --trials 2 --seconds 0.5).
RACE_ARGS  ?=
race-survey:  ## readers (borrow, pointer trick, owned, torch's) vs t.data= / set_ / swap_tensors (+ del), free-threaded and GIL -> proposal/findings/free-threaded.md
	$(call with_both,PYTHONPATH=tests $$FT -P -m findings.race_survey --python $$FT --python $$GIL \
	  --out proposal/findings/free-threaded.md $(RACE_ARGS))

# GIL_PYTHON=python3.13 GIL_TORCH=2.12.0 compares like with like (same CPython, same torch).
bench-freethreaded:  ## Python-level cost, free-threaded 3.13 vs GIL_PYTHON, 5 fresh processes each -> bench/results/freethreaded/
	$(call with_both,out=bench/results/freethreaded; \
	  gil="$$($$GIL -c 'import sys; print("cp%d%d" % sys.version_info[:2])')-torch-$(GIL_TORCH)"; \
	  n=$(EVIDENCE_PROCESSES); \
	  $$GIL -P -m bench.freethreaded --out $$out --processes $$n --label $$gil; \
	  $$FT -P -m bench.freethreaded --out $$out --processes $$n --label cp313t-torch-$(FT_TORCH); \
	  $$FT -P -m bench.freethreaded --report $$out/$$gil.json \
	    $$out/cp313t-torch-$(FT_TORCH).json --md $$out/report-$$gil.md)

bench-freethreaded-quick:  ## bench/freethreaded.py briefly on free-threaded 3.13 (what CI runs)
	set -e; ft="$$($(CPYTHON_FT) | tail -n 1)"; \
	$(MAKE) --no-print-directory env PYTHON="$$ft" TORCH=$(FT_TORCH); \
	FT="$$($(MAKE) -s --no-print-directory env-python PYTHON="$$ft" TORCH=$(FT_TORCH))"; \
	$$FT -P -m bench.freethreaded --quick --out bench/results/scratch

# --- coverage --------------------------------------------------------------------------------
# What the whole suite (tests/bench/ included) covers of the product: the Python of bridge/
# and shim_ext/ (coverage.py, branches, child processes too) and the C headers of bridge/
# and shim_ext/include/ as compiled into the bridge and the consumer examples (gcc
# --coverage, read by gcov). Its own environments (.venv/coverage/), built with
# COVERAGE_FLAGS. The summary is checked against COVERAGE_BASELINE: every line and branch
# outcome covered there must be covered now (tests/covered/__main__.py says how).
COVERAGE_VENVS    := .venv/coverage
COVERAGE_FLAGS    := -O0 --coverage
EXAMPLE_COVERAGE_FLAGS := $(COVERAGE_FLAGS)
COVERAGE_OUT      := build/coverage-torch-$(TORCH)
# The tests' own folders (the examples' builds among them) outside the checkout: git
# commands a test runs in a folder inside a checkout would act on the checkout.
COVERAGE_TMP      := $(or $(TMPDIR),/tmp)/torch-borrow-coverage-torch-$(TORCH)
COVERAGE_BASELINE ?= tests/covered/cross-product-torch-$(TORCH).json
COVERAGE_SUMMARY  ?= tests/covered/covered-torch-$(TORCH).json
cov_py             = $(COVERAGE_VENVS)/torch-$(TORCH)/bin/python -P
# setup.py's build folder of the coverage environment (keyed by its prefix, as setup.py does)
cov_build          = $$($(cov_py) -c 'import sys, pathlib, hashlib; print(*pathlib.Path("build").glob( \
                     "torch-$(TORCH)*-" + hashlib.sha256(str(pathlib.Path(sys.prefix).resolve()).encode()).hexdigest()[:8]))')
.PHONY: coverage
coverage:  ## lines and branch outcomes of bridge/ and shim_ext/ the whole suite covers -> tests/covered/covered-torch-<v>.json, checked against the baseline
	CFLAGS="$(COVERAGE_FLAGS)" LDFLAGS=--coverage \
	  $(MAKE) --no-print-directory env-bench VENVS=$(COVERAGE_VENVS) TORCH=$(TORCH)
	set -o pipefail; $(COVERAGE_VENVS)/torch-$(TORCH)/bin/pip install -q --disable-pip-version-check \
	  "coverage>=7.10" $(PIP_QUIET)
	rm -rf $(COVERAGE_OUT) && mkdir -p $(COVERAGE_OUT)
	find build/torch-$(TORCH)* -name '*.gcda' -delete
	COVERAGE_FILE=$(CURDIR)/$(COVERAGE_OUT)/.coverage EXAMPLE_CFLAGS="$(EXAMPLE_COVERAGE_FLAGS)" \
	  PYTHONSAFEPATH=1 $(cov_py) -m coverage run -m pytest -n $(PYTEST_JOBS) --dist worksteal \
	  -p no:cacheprovider --basetemp=$(COVERAGE_TMP) -q tests $(PYTEST_ARGS)
	COVERAGE_FILE=$(CURDIR)/$(COVERAGE_OUT)/.coverage $(cov_py) -m coverage combine -q
	COVERAGE_FILE=$(CURDIR)/$(COVERAGE_OUT)/.coverage $(cov_py) -m coverage json -q \
	  -o $(COVERAGE_OUT)/python.json
	PYTHONPATH=tests $(cov_py) -m covered --python $(COVERAGE_OUT)/python.json \
	  --gcov-dir $(cov_build) $(COVERAGE_TMP) --out $(COVERAGE_SUMMARY) \
	  --label "the suite at $$(git rev-parse --short HEAD), torch $(TORCH), $(PYTAG)" \
	  $(if $(wildcard $(COVERAGE_BASELINE)),$(if $(filter $(COVERAGE_BASELINE),$(COVERAGE_SUMMARY)),,--baseline $(COVERAGE_BASELINE)))
