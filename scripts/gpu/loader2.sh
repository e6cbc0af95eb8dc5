#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here), one go, under 8 minutes:
# issue 13 (loader-2) on one H200. Generates a dense Llama-shaped bf16 checkpoint (5 GB) and a
# mixture-of-experts one (5 GB, thousands of 1 MiB expert matrices) with `phoenix gen-model`,
# measures the pinned host-to-device copy rate (torch, same run) and `phoenix load --device 0`
# (a fresh JVM per load, page cache warm, medians of 3) with the defaults and with the options
# (headers parsed before the reads, 12 and 16 workers), and prints one table. Every step has a
# time limit; outputs in $OUT (or ./gpu-results):
#   loader2-build.txt   libphoenix build
#   loader2-gen.txt     the two checkpoints (tensor counts, bytes)
#   loader2.json        every run: rates, per-phase timings, medians, ratios to the pinned copy
#   loader2-table.txt   the table (also on stdout)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so" PYTHONUNBUFFERED=1
timeout 180 bash scripts/gpu/build.sh > "$out/loader2-build.txt" 2>&1 || { echo "build failed"; cat "$out/loader2-build.txt"; exit 1; }
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
dense=${DENSE_DIR:-/tmp/l2-dense}; moe=${MOE_DIR:-/tmp/l2-moe}; moepy=${MOEPY_DIR:-/tmp/l2-moe-py}
{
  [ -f "$dense/model.safetensors" ] || timeout 120 ./phoenix gen-model "$dense" --size "${SIZE:-5g}"
  [ -n "${DENSE_ONLY:-}" ] && { moe=/nonexistent; moepy=/nonexistent; }  # DENSE_ONLY=1: the dense checkpoint alone
  [ -n "${DENSE_ONLY:-}" ] || [ -f "$moe/model.safetensors" ] || timeout 120 ./phoenix gen-model "$moe" --size "${SIZE:-5g}" --experts "${EXPERTS:-96}"
  # as a new user writes one: safetensors.torch.save_file, 4,608 expert matrices of 1 MiB
  [ -n "${DENSE_ONLY:-}" ] || [ -f "$moepy/model.safetensors" ] || timeout 120 python3 -c "
import sys, torch
from safetensors.torch import save_file
t = {'model.embed_tokens.weight': torch.zeros(32000, 4096, dtype=torch.bfloat16)}
for l in range(24):
    for e in range(64):
        for w in ('gate_proj', 'up_proj', 'down_proj'):
            t[f'model.layers.{l}.mlp.experts.{e}.{w}.weight'] = torch.zeros(128, 4096, dtype=torch.bfloat16)
import os; os.makedirs(sys.argv[1], exist_ok=True)
save_file(t, sys.argv[1] + '/model.safetensors', metadata={'format': 'pt'})
print(len(t), 'tensors')" "$moepy"
  ls -l "$dense" "$moe" "$moepy"
} > "$out/loader2-gen.txt" 2>&1
[ -n "${DENSE_ONLY:-}" ] && { moe=/nonexistent; moepy=/nonexistent; }
cat "$out/loader2-gen.txt"
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 330 python3 scripts/gpu/loader2.py "$dense/model.safetensors" "$moe/model.safetensors" "$moepy/model.safetensors" \
  --repeat "${REPEAT:-3}" --json "$out/loader2.json" 2>&1 | tee "$out/loader2-table.txt"
