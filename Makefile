# The two jobs, each setting itself up on a fresh machine:
#   make bench   the benchmarks on the default torch (the main job; `make bench-evidence`
#                writes the same run into the committed bench/results/)
#   make test    the test suite on every supported torch (or: make test TORCH=2.14.1)
# Environments live in .venv/torch-<version>/ inside the checkout; `make clean` removes them.
# `make help` lists every target.

PYTHON         ?= python3
# The default torch: the newest release. TORCH=... on the command line picks another.
TORCH          ?= 2.15.0
TORCH_VERSIONS := 2.15.0 2.14.1 2.13.0
# `make test` runs every version unless TORCH was given on the command line.
TEST_TORCH     := $(if $(filter command line,$(origin TORCH)),$(TORCH),$(TORCH_VERSIONS))

VENVS    := .venv
env       = $(VENVS)/torch-$(1)
# -P: never import bridge/ from the source tree, which holds no compiled module;
# the package under test is the one built into the environment.
py        = $(call env,$(1))/bin/python -P
SOURCES  := pyproject.toml setup.py $(wildcard bridge/*.py bridge/*.pyx shim_ext/*.py \
            shim_ext/*.cpp shim_ext/include/torch_borrow/*.h)
BUILD_DEPS := "cython>=3.0" "cffi>=1.17" "setuptools>=77" wheel packaging
# Quiet pip, but keep its errors; the local-index warnings of this machine are noise.
PIP_QUIET := 2>&1 | { grep -v '^WARNING: Location' || true; }

SHELL := /bin/bash
# The environment stamps are made by pattern rules; keep them (never "intermediate").
.SECONDARY:

.PHONY: help bench bench-evidence bench-quick bench-report callgrind test test-devmode memcheck survey info clean patch-check $(addprefix test-,$(TORCH_VERSIONS))
.DEFAULT_GOAL := help

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

# --- environments ------------------------------------------------------------------------
# One virtual environment per torch version. PIP_CONSTRAINT pins torch to exactly that
# version and replaces any machine-wide pip constraint (which may cap torch lower).
$(VENVS)/torch-%/.ready:
	@echo ">>> creating $(call env,$*) (torch $*; several GB on first use, then pip's cache)"
	@mkdir -p $(VENVS)
	$(PYTHON) -m venv $(call env,$*)
	@echo "torch==$*" > $(call env,$*)/constraints.txt
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  $(call env,$*)/bin/pip install -q --disable-pip-version-check "torch==$*" $(BUILD_DEPS) $(PIP_QUIET)
	@touch $@

# The build: the cffi shim against this torch's headers, and the Cython bridge. flock
# keeps two makes that share a checkout from installing into one environment at once.
$(VENVS)/torch-%/.built: $(VENVS)/torch-%/.ready $(SOURCES)
	@echo ">>> building shim_ext and bridge against torch $* (about 1.5 min)"
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock $(call env,$*)/.lock $(call env,$*)/bin/pip install -q --disable-pip-version-check --no-build-isolation \
	  ".[test]" $(PIP_QUIET)
	@touch $@

# The benchmarks' own needs (pyproject's `bench` extra), only where benchmarks run.
$(VENVS)/torch-%/.bench: $(VENVS)/torch-%/.built pyproject.toml
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock $(call env,$*)/.lock $(call env,$*)/bin/pip install -q --disable-pip-version-check \
	  $$($(call env,$*)/bin/python -c "import tomllib; print(' '.join(\
	    tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench']))") \
	  $(PIP_QUIET)
	@touch $@

# The patch check's own needs (pyproject's `patch` extra), in the torch 2.15.0 environment.
$(VENVS)/torch-%/.patch: $(VENVS)/torch-%/.built pyproject.toml
	set -o pipefail; PIP_CONSTRAINT=$(CURDIR)/$(call env,$*)/constraints.txt \
	  flock $(call env,$*)/.lock $(call env,$*)/bin/pip install -q --disable-pip-version-check \
	  $$($(call env,$*)/bin/python -c "import tomllib; print(' '.join(\
	    tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['patch']))") \
	  $(PIP_QUIET)
	@touch $@

# --- the jobs ----------------------------------------------------------------------------
# `make bench` writes into the git-ignored bench/results/scratch/, so running it never
# changes a tracked file; `make bench-evidence` (the same run) refreshes the committed
# evidence in bench/results/. BENCH_OUT=DIR picks another folder for bench and bench-report.
BENCH_OUT ?= bench/results/scratch
bench: $(VENVS)/torch-$(TORCH)/.bench  ## benchmarks on the default torch (TORCH=...) into bench/results/scratch/
	$(call py,$(TORCH)) bench/run.py --out $(BENCH_OUT)

bench-evidence: $(VENVS)/torch-$(TORCH)/.bench  ## the same run, refreshing the committed bench/results/ (quiet machine)
	$(call py,$(TORCH)) bench/run.py --out bench/results

bench-quick: $(VENVS)/torch-$(TORCH)/.bench  ## every benchmark briefly (what CI runs)
	$(call py,$(TORCH)) bench/run.py --quick --out bench/results/scratch

bench-report: $(VENVS)/torch-$(TORCH)/.bench  ## redo tables and chart from the saved JSON in BENCH_OUT (default scratch)
	$(call py,$(TORCH)) bench/report.py $(BENCH_OUT)/bench-torch-$(TORCH).json \
	  --md $(BENCH_OUT)/bench-torch-$(TORCH).md --chart $(BENCH_OUT)/bench-torch-$(TORCH).svg

# Instruction counts (valgrind's callgrind) of each path's native loop: deterministic,
# whatever the machine's load, so they are committed as they come out.
callgrind: $(VENVS)/torch-$(TORCH)/.built  ## instructions per call of each path's native loop -> bench/results/callgrind-torch-<v>.md
	$(call py,$(TORCH)) bench/callgrind.py --out bench/results

test: $(addprefix test-,$(TEST_TORCH))  ## the suite on torch 2.15.0, 2.14.1 and 2.13.0 (or TORCH=...)

$(addprefix test-,$(TORCH_VERSIONS)): test-%: $(VENVS)/torch-%/.built
	@echo ">>> tests on torch $*"
	$(call py,$*) -m pytest $(PYTEST_ARGS)

# The patches' base takes headers from the torch 2.15.0 wheel, so this always runs there.
patch-check: $(VENVS)/torch-2.15.0/.patch  ## apply the patches to PyTorch's base, compile, nm, build + run their test, upstream's linters
	$(call py,2.15.0) proposal/patch_check.py

info: $(VENVS)/torch-$(TORCH)/.built  ## what `python -m bridge info` says on TORCH
	$(call py,$(TORCH)) -m bridge info

clean:  ## remove the environments and build directories
	rm -rf $(VENVS) build *.egg-info bridge/_bridge.c .pytest_cache .hypothesis

# --- hardening (issue 5) -------------------------------------------------------------------
test-devmode: $(VENVS)/torch-$(TORCH)/.built  ## the suite once under python -X dev with PYTHONMALLOC=debug (TORCH=...)
	@echo ">>> tests on torch $(TORCH) in dev mode, debug allocator"
	PYTHONMALLOC=debug $(call py,$(TORCH)) -X dev -m pytest $(PYTEST_ARGS)

memcheck: $(VENVS)/torch-$(TORCH)/.built  ## views and hostile inputs under valgrind memcheck; fails on an error in our modules
	$(call py,$(TORCH)) tests/hostile/memcheck.py --python $(call env,$(TORCH))/bin/python

survey: $(VENVS)/torch-2.14.1/.built $(VENVS)/torch-2.15.0/.built  ## torch's own torch_tensor_from_pyobject on the hostile inputs -> proposal/findings-torch-shim.md
	$(call py,2.15.0) tests/hostile/torch_shim_survey.py --out proposal/findings-torch-shim.md \
	  --python $(call env,2.14.1)/bin/python --python $(call env,2.15.0)/bin/python

# --- CUDA tensors on a GPU machine (issue 7) ------------------------------------------------
.PHONY: gpu-bench
gpu-bench:  ## CUDA parity tests + benchmarks (bench/gpu/run.sh) where a GPU is; else how to run it
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  bench/gpu/run.sh; \
	else \
	  echo "no GPU here. On the GPU machine, through the device tool's run, from the repository root:"; \
	  echo "  command: OUT=\$$OUT timeout 560 bench/gpu/run.sh   (--quick: a check; --two-gpu: device index 1)"; \
	  echo "  carry:   [\".whl\"]  (cp312 cffi + pycparser wheels: see bench/README.md, GPU section)"; \
	  echo "then copy the files it returns into bench/results/ (bench/README.md says which)."; \
	fi
