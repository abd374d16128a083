#!/usr/bin/env bash
# The whole GPU run, prepared and run in one command on a GPU machine that may have no
# network (Python 3.12 with torch and cuda-core; cffi and pycparser from wheels in .whl/
# if the machine lacks them: bench/README.md says how to get them). From the repository
# root:
#
#   bench/gpu/run.sh [--quick] [--two-gpu] [--tests-only] [--bench-only] [--shims-only]
#
#   (no flag)    build; tests/bridge/test_cuda.py + the CPU parity/api/availability tests;
#                the benchmarks with CUDA tensors, then with CPU tensors on the same
#                host, consumer.h's timed row and scenario F (torch's generated C shims),
#                each from $PROCESSES fresh processes (default 5) of $ROUNDS rounds
#                (default 12), the routes' order shuffled per process
#   --quick      the same, benchmarks in quick mode, one process (checks that it all
#                runs; no evidence)
#   --two-gpu    build; only the tests that need a second GPU (device index 1)
#   --tests-only build and the tests, no benchmarks
#   --bench-only build and the benchmarks, no tests (with --tests-only in a second
#                command: the same run in two shorter parts)
#   --shims-only build and, of the benchmarks, consumer.h's timed row and scenario F only
#   --dlpack-only build and the DLPack series' own code only: its cut-out functions and
#                test cases on this torch, CPU and CUDA (proposal/tools/dlpack_device_check.py;
#                the full run and --tests-only run it too)
#   --numba-only build and numba-cuda's launches per route only (bench/numba_cuda/run.py,
#                its timed tables from $PROCESSES fresh processes too; the full run does
#                it last, where numba-cuda is installed)
#
# Writes into $OUT (default build/gpu-out) two files:
#   run.log                  everything printed, in order
#   gpu-results.tar.gz       the result files (none with --tests-only / --two-gpu):
#     gpu-<gpu>-torch-<v>.{json,md,svg,pytest-benchmark.txt}   CUDA tensors on cuda:0
#     gpu-<gpu>-host-cpu-torch-<v>.{...}   the same benchmarks, CPU tensors, same host
#     time-consumer-<py>-torch-<v>-<device>.{json,md}   consumer.h's row, timed
#     c-shims-gpu-<gpu>[-host-cpu]-torch-<v>.{json,md}   ATen ops through torch's
#                                          generated C shims (bench/c_shims/run.py)
#     numba-cuda-gpu-<gpu>-torch-<v>.{json,md}   numba-cuda's launches, per route
#   (unpack into bench/results/: tar -xzf gpu-results.tar.gz -C bench/results)
#
# Why the steps look this way:
# - cffi and pycparser may be missing there and nothing may be fetchable: the cp312
#   wheels in .whl/ go into /tmp/site (PYTHONPATH);
# - the package is built against that machine's torch without build isolation (pip
#   would otherwise look for a fresh torch) into /tmp/bridge-site, never into the image;
# - python runs with -P, so the source tree's uncompiled bridge/ is never imported.
set -uo pipefail

MODE=full
PART=all
for arg in "$@"; do
  case "$arg" in
    --quick) MODE=quick ;;
    --two-gpu) MODE=two-gpu ;;
    --tests-only) PART=tests ;;
    --bench-only) PART=bench ;;
    --numba-only) PART=numba ;;
    --shims-only) PART=shims ;;
    --dlpack-only) PART=dlpack ;;
    -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/build/gpu-out}
PYTHON=${PYTHON:-python3}
SITE=${SITE:-/tmp/site}
PKG=${PKG:-/tmp/bridge-site}
# The result files are written here and bundled into $OUT/gpu-results.tar.gz after each
# benchmark step, so what comes back is two files however many the benchmarks write.
RESULTS=${RESULTS:-/tmp/gpu-results}
PROCESSES=${PROCESSES:-5}
ROUNDS=${ROUNDS:-12}
# Fresh processes per route for numba-cuda's own benchmark file (about 11 s each per route
# on an H200 host: 5 adds some 6 minutes to the numba-cuda step).
SUITE_PASSES=${SUITE_PASSES:-5}
# A sentence about this host for the reports (python -P -m bench --host-note), e.g. why it runs
# the torch it runs; none by default.
HOST_NOTE=${HOST_NOTE:-}
mkdir -p "$OUT"
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
exec > >(tee -a "$OUT/run.log") 2>&1
export PYTHONUNBUFFERED=1
# On shared multi-GPU hosts NVLink multicast stays off (NCCL, PyTorch, NVSHMEM).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

step() { echo; echo ">>> [$(date -u +%H:%M:%S)] $*"; }
# (Re)bundle what $RESULTS holds so far: a run stopped by a time limit still leaves the
# tables of the steps that finished.
bundle() {
  if compgen -G "$RESULTS/*" >/dev/null; then
    tar -czf "$OUT/gpu-results.tar.gz.part" -C "$RESULTS" . \
      && mv "$OUT/gpu-results.tar.gz.part" "$OUT/gpu-results.tar.gz"
  fi
}
FAILED=()

step "machine ($MODE, $PART)"
nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
"$PYTHON" - <<'PY'
import platform, torch
from importlib import metadata
print("python", platform.python_version(), "torch", torch.__version__,
      "cuda available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
for d in range(torch.cuda.device_count()):
    print(f"  cuda:{d}", torch.cuda.get_device_name(d))
for dist in ("cuda-core", "cuda-bindings", "cython", "pytest", "pytest-benchmark", "numpy",
             "scipy", "matplotlib", "hypothesis", "setuptools", "cffi", "pycparser"):
    try:
        print(f"  {dist} {metadata.version(dist)}")
    except metadata.PackageNotFoundError:
        print(f"  {dist} (not installed)")
PY

# The machine gets a copy of the working tree, not a commit: fingerprint the sources that
# are built and measured, so a result can be matched to the commit that holds them.
echo "sources sha256: $(cat pyproject.toml setup.py bridge/*.py bridge/*.pyx shim_ext/*.py \
  shim_ext/*.cpp shim_ext/include/torch_borrow/*.h bench/*.py bench/*/*.py bench/native/*.pyx bench/native/*.c bench/native/*.cpp bench/native/*.h \
  bridge/*.pxd tests/bridge/test_cuda.py tests/shim_ext/test_metadata_rule.py \
  tests/helpers/*.py | sha256sum | cut -c1-16)"

step "wheels of .whl/ -> $SITE"
WHEELS=${WHEELS:-.whl}  # the downloaded wheels (another folder, or none, for a local dry run)
# numpy's wheel, if there, is for the numba-cuda step alone (below), not for this folder.
BUILD_WHEELS=()
for w in "$WHEELS"/*.whl; do [[ -e $w && $(basename "$w") != numpy-* ]] && BUILD_WHEELS+=("$w"); done
if ((${#BUILD_WHEELS[@]})); then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${BUILD_WHEELS[@]}" || exit 1
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
else
  echo "no wheels in $WHEELS: using the cffi and pycparser of $PYTHON"
fi

step "build shim_ext and bridge against this torch -> $PKG"
SECONDS=0
rm -rf "$PKG"
"$PYTHON" -m pip install -q --no-index --no-build-isolation --no-deps --no-cache-dir \
  --target "$PKG" . || exit 1
echo "built in ${SECONDS}s"
# The checkout root after the built package: `-m bench` imports the benchmark package from
# here, `bridge` from $PKG (what the .pth of a make environment does there).
export PYTHONPATH=$PKG${PYTHONPATH:+:$PYTHONPATH}:$PWD
"$PYTHON" -P -m bridge info || exit 1

PYTEST=("$PYTHON" -P -m pytest -p no:cacheprovider -q -rs)
if [[ $MODE == two-gpu ]]; then
  step "tests needing two GPUs (device index 1)"
  "${PYTEST[@]}" tests/bridge/test_cuda.py -k "device_index_1 or two_devices" \
    || FAILED+=(two-gpu-tests)
else
 if [[ $PART == all || $PART == tests || $PART == dlpack ]]; then
  step "the DLPack series' own code: its cut-out functions and test cases on this torch (CPU and CUDA)"
  "$PYTHON" -P proposal/tools/dlpack_device_check.py || FAILED+=(dlpack-series)
 fi
 if [[ $PART == all || $PART == tests ]]; then
  step "tests: CUDA parity, and the borrow's rule on CUDA and CPU tensors"
  "${PYTEST[@]}" tests/bridge/test_cuda.py tests/shim_ext/test_metadata_rule.py \
    || FAILED+=(test_cuda)
  step "tests: CPU parity, api, availability, the internal fixes on this torch"
  "${PYTEST[@]}" tests/bridge/test_parity.py tests/bridge/test_api.py \
    tests/bridge/test_availability.py tests/bench/test_internal_fixes.py \
    || FAILED+=(cpu-tests)
  step "tests: the seed's consumer (cuda.core StridedMemoryView via each route, the fixed ones included; CPU and CUDA)"
  "${PYTEST[@]}" tests/bench/test_cuda_core_consumer.py || FAILED+=(consumer-tests)
  step "consumer.h: the consumer examples' tests"
  "${PYTEST[@]}" tests/shim_ext/test_consumer_example.py tests/shim_ext/test_consumer_header.py \
    || FAILED+=(consumer-header-tests)
  step "C shims: tests (CPU and CUDA tensors)"
  "${PYTEST[@]}" tests/bench/test_c_shims.py || FAILED+=(c-shims-tests)
 fi
 # The evidence: every table from $PROCESSES fresh processes (--processes); a quick run
 # stays one process. GPU_STEM names the CPU-tensor runs of a GPU host.
 QUICK=(--processes "$PROCESSES" --rounds "$ROUNDS")
 [[ $MODE == quick ]] && QUICK=(--quick)
 GPU_STEM=
 if "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
   GPU_STEM=$("$PYTHON" -P -c 'from bench import processes; import torch
print(processes.default_stem(torch, "cuda").replace("-torch-", "-host-cpu-torch-"))')
 fi
 if [[ $PART == all || $PART == bench ]]; then
  if [[ -n $GPU_STEM ]]; then
    step "benchmarks: CUDA tensors (${QUICK[*]})"
    "$PYTHON" -P -m bench "${QUICK[@]}" --device cuda --out "$RESULTS" \
      ${HOST_NOTE:+--host-note "$HOST_NOTE"} || FAILED+=(bench-cuda)
    bundle
  else
    echo "no CUDA device: the CUDA benchmarks are not run"
  fi
  step "benchmarks: CPU tensors on the same host, for comparison (${QUICK[*]})"
  "$PYTHON" -P -m bench "${QUICK[@]}" --out "$RESULTS" ${GPU_STEM:+--stem "$GPU_STEM"} \
    ${HOST_NOTE:+--host-note "$HOST_NOTE"} || FAILED+=(bench-cpu)
  bundle
 fi
 if [[ $PART == all || $PART == bench || $PART == shims ]]; then
  CONSUMER_DEVICE=cpu; [[ -n $GPU_STEM ]] && CONSUMER_DEVICE=cuda
  CONSUMER=(--processes "$PROCESSES" --rounds "$ROUNDS")
  [[ $MODE == quick ]] && CONSUMER=(--rounds 3 --calls 1000 --warmup 100)
  step "consumer.h: its row (time; CUDA tensors where present; ${CONSUMER[*]})"
  "$PYTHON" -P -m bench.consumer_header --no-count --time --device "$CONSUMER_DEVICE" \
    "${CONSUMER[@]}" --out "$RESULTS" || FAILED+=(consumer-header-bench)
  bundle

  # ATen ops through torch's generated C shims (aoti_torch_cuda_* on CUDA tensors), input
  # handles owned / owned + interpreter fix / borrowed: scenario F with CUDA tensors and
  # with the host's CPU tensors.
  if [[ -n $GPU_STEM ]]; then
    step "C shims: scenario F, CUDA tensors (${QUICK[*]})"
    "$PYTHON" -P -m bench.c_shims.run "${QUICK[@]}" --device cuda --out "$RESULTS" \
      || FAILED+=(c-shims-cuda)
    bundle
  fi
  step "C shims: scenario F, CPU tensors on the same host (${QUICK[*]})"
  "$PYTHON" -P -m bench.c_shims.run "${QUICK[@]}" --out "$RESULTS" \
    ${GPU_STEM:+--stem "c-shims-$GPU_STEM"} || FAILED+=(c-shims-cpu)
  bundle
 fi
fi

# numba-cuda's launches with torch arguments, per route. numba-cuda 0.30 compiles nothing
# with numpy 2.5 (np.row_stack is gone): a numpy 2.3 wheel in $WHEELS, if there, goes into
# its own folder first on PYTHONPATH for this step only (torch works with it).
if [[ $PART == numba || ( $PART == all && $MODE != two-gpu ) ]]; then
  if "$PYTHON" -c 'import numba_cuda' 2>/dev/null; then
    step "numba-cuda: launches with torch arguments, per route"
    NUMPY_SITE=${NUMPY_SITE:-/tmp/numpy-site}
    NP_PATH=
    if ls "${WHEELS:-.whl}"/numpy-*.whl >/dev/null 2>&1; then
      "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$NUMPY_SITE" "${WHEELS:-.whl}"/numpy-*.whl && NP_PATH=$NUMPY_SITE
    fi
    NUMBA_QUICK=(--processes "$PROCESSES" --rounds "$ROUNDS" --suite-passes "$SUITE_PASSES")
    [[ $MODE == quick ]] && NUMBA_QUICK=(--quick)
    PYTHONPATH=${NP_PATH:+$NP_PATH:}$PYTHONPATH "$PYTHON" -P -m bench.numba_cuda.run \
      "${NUMBA_QUICK[@]}" --out "$RESULTS" || FAILED+=(numba-cuda)
    bundle
  else
    echo "numba-cuda is not installed: its launches are not measured"
  fi
fi

step "done"
bundle
[[ -f $OUT/gpu-results.tar.gz ]] && tar -tzvf "$OUT/gpu-results.tar.gz"
ls -la "$OUT"
if ((${#FAILED[@]})); then
  echo "FAILED: ${FAILED[*]}"
  exit 1
fi
echo "all steps passed"
