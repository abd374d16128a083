#!/usr/bin/env bash
# The whole GPU run, prepared and run in one command on a GPU machine that may have no
# network (Python 3.12 with torch and cuda-core; cffi and pycparser from wheels in .whl/
# if the machine lacks them: bench/README.md says how to get them). From the repository
# root:
#
#   bench/gpu/run.sh [--quick] [--two-gpu]
#
#   (no flag)  build; tests/test_cuda.py + the CPU parity/api/availability tests;
#              the benchmarks with CUDA tensors, then with CPU tensors on the same host
#   --quick    the same, benchmarks in quick mode (checks that it all runs; no evidence)
#   --two-gpu  build; only the tests that need a second GPU (device index 1)
#
# Writes into $OUT (default build/gpu-out):
#   run.log                               everything printed, in order
#   gpu-<gpu>-torch-<v>.{json,md,svg}     benchmarks, CUDA tensors on cuda:0
#   gpu-<gpu>-host-cpu-torch-<v>.{...}    the same benchmarks, CPU tensors, same host
#   fallback-ops-gpu-<gpu>[-host-cpu]-torch-<v>.{json,md}   ATen ops through the C
#                                         fallback shims (bench/fallback_ops_run.py)
#
# Why the steps look this way:
# - cffi and pycparser may be missing there and nothing may be fetchable: the cp312
#   wheels in .whl/ go into /tmp/site (PYTHONPATH);
# - the package is built against that machine's torch without build isolation (pip
#   would otherwise look for a fresh torch) into /tmp/bridge-site, never into the image;
# - python runs with -P, so the source tree's uncompiled bridge/ is never imported.
set -uo pipefail

MODE=full
for arg in "$@"; do
  case "$arg" in
    --quick) MODE=quick ;;
    --two-gpu) MODE=two-gpu ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/build/gpu-out}
PYTHON=${PYTHON:-python3}
SITE=${SITE:-/tmp/site}
PKG=${PKG:-/tmp/bridge-site}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
export PYTHONUNBUFFERED=1
# On shared multi-GPU hosts NVLink multicast stays off (NCCL, PyTorch, NVSHMEM).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

step() { echo; echo ">>> [$(date -u +%H:%M:%S)] $*"; }
FAILED=()

step "machine ($MODE)"
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
  bridge/*.pxd tests/test_cuda.py tests/test_metadata_rule.py \
  tests/helpers/*.py | sha256sum | cut -c1-16)"

step "wheels of .whl/ -> $SITE"
WHEELS=${WHEELS:-.whl}  # the downloaded wheels (another folder, or none, for a local dry run)
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$WHEELS"/*.whl || exit 1
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
  "${PYTEST[@]}" tests/test_cuda.py -k "device_index_1 or two_devices" || FAILED+=(two-gpu-tests)
else
  step "tests: CUDA parity, and the borrow's rule on CUDA and CPU tensors"
  "${PYTEST[@]}" tests/test_cuda.py tests/test_metadata_rule.py || FAILED+=(test_cuda)
  step "tests: CPU parity, api, availability, the internal fixes on this torch"
  "${PYTEST[@]}" tests/test_parity.py tests/test_api.py tests/test_availability.py \
    tests/test_internal_fixes.py \
    || FAILED+=(cpu-tests)
  step "tests: the seed's consumer (cuda.core StridedMemoryView via each route; CPU and CUDA)"
  "${PYTEST[@]}" tests/test_cuda_core_consumer.py || FAILED+=(consumer-tests)

  QUICK=(); [[ $MODE == quick ]] && QUICK=(--quick)
  if "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
    step "benchmarks: CUDA tensors"
    "$PYTHON" -P -m bench "${QUICK[@]}" --device cuda --out "$OUT" || FAILED+=(bench-cuda)
    GPU_STEM=$("$PYTHON" -P -c 'from bench import __main__ as run; import torch
print(run.default_stem(torch, "cuda").replace("-torch-", "-host-cpu-torch-"))')
  else
    echo "no CUDA device: the CUDA benchmarks are not run"
    GPU_STEM=
  fi
  step "consumer.h: the consumer examples' tests, and its row (time; CUDA tensors where present)"
  "${PYTEST[@]}" tests/test_consumer_example.py tests/test_consumer_header.py \
    || FAILED+=(consumer-header-tests)
  CONSUMER_DEVICE=cpu; [[ -n $GPU_STEM ]] && CONSUMER_DEVICE=cuda
  "$PYTHON" -P -m bench.consumer_header --no-count --time --device "$CONSUMER_DEVICE" \
    ${QUICK:+--rounds 3 --calls 1000 --warmup 100} --out "$OUT" || FAILED+=(consumer-header-bench)
  step "benchmarks: CPU tensors on the same host, for comparison"
  "$PYTHON" -P -m bench "${QUICK[@]}" --out "$OUT" ${GPU_STEM:+--stem "$GPU_STEM"} \
    || FAILED+=(bench-cpu)

  # ATen ops through torch's C fallback shims (aoti_torch_cuda_* on CUDA tensors), input
  # handles owned / owned + interpreter fix / borrowed: tests (CPU and CUDA tensors), then
  # scenario F with CUDA tensors and with the host's CPU tensors.
  step "fallback shims: tests (CPU and CUDA tensors)"
  "${PYTEST[@]}" tests/test_fallback_ops.py || FAILED+=(fallback-ops-tests)
  if [[ -n $GPU_STEM ]]; then
    step "fallback shims: scenario F, CUDA tensors"
    "$PYTHON" -P -m bench.fallback_ops_run "${QUICK[@]}" --device cuda --out "$OUT" \
      || FAILED+=(fallback-ops-cuda)
  fi
  step "fallback shims: scenario F, CPU tensors on the same host"
  "$PYTHON" -P -m bench.fallback_ops_run "${QUICK[@]}" --out "$OUT" \
    ${GPU_STEM:+--stem "fallback-ops-$GPU_STEM"} || FAILED+=(fallback-ops-cpu)
fi

step "done"
ls -la "$OUT"
if ((${#FAILED[@]})); then
  echo "FAILED: ${FAILED[*]}"
  exit 1
fi
echo "all steps passed"
