#!/usr/bin/env bash
# One GPU check in one call: the GPU tests, compute-sanitizer on one training step,
# bench/cuda_conv.py, bench/cuda_train.py, bench/cuda_conv.py with TF32 on both sides and
# bench/cuda_train.py in bf16 mixed precision (tfc vs PyTorch's autocast), within
# GPU_CHECK_BUDGET seconds (350: under the 6 minutes a check on a lent H100/H200 may take),
# logs in one folder.
#
#   bash bench/gpu_check.sh                 # on the GPU machine (docs/cuda.md: the exact call)
#   bash bench/gpu_check.sh --fetch-wheels  # here, before: cffi and pycparser wheels into .whl/
#   bash bench/gpu_check.sh --dry-run       # without a GPU: the GPU tests collected, the other
#                                           # steps under device emulation at tiny sizes
#                                           # (tests/test_gpu_check.py runs it)
#
# Logs go to $OUT if set (the device tool's folder), else gpu_logs/: env.log, tests.log,
# sanitizer.log, conv.log, train.log, conv_tf32.log, train_bf16.log and summary.txt (each step's exit status,
# time and result lines). The GPU machine has no cffi or pycparser: they are installed from the
# wheels in $TFC_WHEELS (default .whl/, which the call carries) into a temporary folder.
# Each step's time limit can be changed: GPU_CHECK_TESTS_S, _SANITIZER_S, _CONV_S, _TRAIN_S,
# _TF32_S, _BF16_S (a step gets at most what is left of the budget).
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=${TFC_WHEELS:-.whl}
mode=${1:-gpu}

if [ "$mode" = "--fetch-wheels" ]; then
    # the GPU machine's python is CPython 3.12 on x86-64
    exec "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS" cffi==2.0.0 pycparser==3.0
fi
if [ "$mode" != "gpu" ] && [ "$mode" != "--dry-run" ]; then
    echo "usage: bash bench/gpu_check.sh [--dry-run | --fetch-wheels]" >&2
    exit 2
fi

LOGS=${OUT:-gpu_logs}
mkdir -p "$LOGS"
SUMMARY=$LOGS/summary.txt
DEADLINE=$((SECONDS + ${GPU_CHECK_BUDGET:-350}))
export PYTHONUNBUFFERED=1

if ! "$PY" -c "import cffi, pycparser" 2>/dev/null; then
    site=${TMPDIR:-/tmp}/tfc_gpu_check_site
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$WHEELS"/*.whl; then
        echo "gpu_check: cffi and pycparser are missing and no wheels in $WHEELS" \
            "(bash bench/gpu_check.sh --fetch-wheels, then carry .whl)" | tee "$SUMMARY" >&2
        exit 2
    fi
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

CUDA_TESTS=(tests/test_cuda.py tests/test_cuda_conv.py tests/test_cuda_emulated.py
    tests/test_cuda_executables.py tests/test_cuda_fuse.py tests/test_distributed_cuda.py
    tests/test_cuda_resnet.py)
if [ "$mode" = "--dry-run" ]; then
    export TFC_CUDA=emulate
    tests=(-m cuda --collect-only "${CUDA_TESTS[@]}")  # the GPU tests it would run
    sanitizer=()  # no GPU, so no compute-sanitizer: the same step runs bare
    step_args=(--batch 1 --resnet-blocks 1)
    conv_args=(--only res128-s2 --batch 1 --runs 1 --warmup 0)
    tf32_args=(--only lenet-c1 --batch 1 --runs 1 --warmup 0 --tf32)  # emulated wmma is slow
    train_args=(--only resnet128 --batch 1 --resnet-blocks 1 --steps 1 --warmup 0
        --no-compile --torch-device cpu)
    bf16_args=(--only lenet64 --batch 1 --steps 1 --warmup 0 --no-compile --torch-device cpu)
else
    tests=(-m cuda -n 8 -rs "${CUDA_TESTS[@]}")
    sanitizer=(compute-sanitizer --tool memcheck --error-exitcode 9)
    step_args=(--batch 8 --resnet-blocks 1)  # every kernel kind, a stride-phase GEMM too
    conv_args=(--runs 30)
    tf32_args=(--runs 30 --tf32)
    train_args=(--steps 50 --only mlp64,lenet1024,resnet128,resnet512)
    bf16_args=(--steps 30 --only mlp4096,resnet512 --no-compile)  # against autocast eager
fi

# step NAME SECONDS LINES COMMAND...: runs COMMAND into NAME.log within SECONDS (or what is left
# of the budget) and adds its exit status and the log's last LINES lines to the summary
step() {
    local name=$1 limit=$2 lines=$3
    shift 3
    local left=$((DEADLINE - SECONDS))
    ((limit > left)) && limit=$left
    if ((limit < 10)); then
        echo "== $name: not run (the budget is spent)" >>"$SUMMARY"
        return
    fi
    local start=$SECONDS rc
    timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    local verdict=ok
    ((rc != 0)) && verdict="FAILED (exit $rc)"
    ((rc == 124 || rc == 137)) && verdict="TIMED OUT after $limit s"
    {
        echo "== $name: $verdict, $((SECONDS - start)) s: $*"
        tail -n "$lines" "$LOGS/$name.log"
        echo
    } >>"$SUMMARY"
}

echo "gpu_check $mode, $(date -u +%FT%TZ)" >"$SUMMARY"
{
    echo "TFC_CUDA=${TFC_CUDA:-}"
    nvidia-smi -L 2>&1 || echo "no nvidia-smi"
    nvcc --version 2>&1 | tail -n 2 || echo "no nvcc"
    "$PY" --version
    "$PY" -c "import numpy, cffi; print('numpy', numpy.__version__, 'cffi', cffi.__version__)"
    "$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" 2>&1 |
        tail -n 1
    uptime
} >"$LOGS/env.log" 2>&1
cat "$LOGS/env.log" >>"$SUMMARY"
echo >>"$SUMMARY"

step tests "${GPU_CHECK_TESTS_S:-170}" 12 "$PY" -m pytest -q -p no:cacheprovider "${tests[@]}"
step sanitizer "${GPU_CHECK_SANITIZER_S:-60}" 8 "${sanitizer[@]}" "$PY" bench/cuda_train.py \
    --tfc-only --only resnet128 "${step_args[@]}" --steps 1 --warmup 0
step conv "${GPU_CHECK_CONV_S:-50}" 14 "$PY" bench/cuda_conv.py "${conv_args[@]}"
step train "${GPU_CHECK_TRAIN_S:-150}" 8 "$PY" bench/cuda_train.py "${train_args[@]}"
step conv_tf32 "${GPU_CHECK_TF32_S:-60}" 14 "$PY" bench/cuda_conv.py "${tf32_args[@]}"
step train_bf16 "${GPU_CHECK_BF16_S:-45}" 6 "$PY" bench/cuda_train.py --precision bf16 \
    "${bf16_args[@]}"
cat "$SUMMARY"
! grep -q "^== .*\(FAILED\|TIMED OUT\|not run\)" "$SUMMARY"
