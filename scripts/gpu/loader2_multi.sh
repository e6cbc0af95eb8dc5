#!/usr/bin/env bash
# Run ON A TWO-GPU MACHINE (nvidia-h200-x2; after scripts/gpu/prepare.sh here), one go, under
# 8 minutes: issue 13's several-GPU figures. Generates a 10 GB dense checkpoint, then, page cache
# warm, a fresh JVM per load, medians of 3: one load into device 0 and one into device 1
# (their sum is "two sequential single-GPU loads"), `--devices 0,1` (replicate) and
# `--devices 0,1 --spread split`, and one replicate with --checksums (equal digests on both
# devices). Bars: replicate <= 0.6x the two single loads' time, split >= 1.7x the single rate.
# Outputs in $OUT (or ./gpu-results): loader2-multi.json, loader2-multi.txt (also on stdout).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so" PYTHONUNBUFFERED=1
timeout 180 bash scripts/gpu/build.sh > "$out/loader2-build.txt" 2>&1 || { echo "build failed"; cat "$out/loader2-build.txt"; exit 1; }
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
nvidia-smi --query-gpu=index,name --format=csv,noheader; nvidia-smi topo -m 2>/dev/null | head -5
m=${MODEL_DIR:-/tmp/l2-multi}
[ -f "$m/model.safetensors" ] || timeout 200 ./phoenix gen-model "$m" --size "${SIZE:-10g}" >&2
timeout 330 python3 - "$m" "${REPEAT:-3}" "$out/loader2-multi.json" <<'PY' | tee "$out/loader2-multi.txt"
import json, os, statistics, subprocess, sys
m, repeat, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
f = os.path.join(m, "model.safetensors")
with open(f, "rb", buffering=0) as fh:
    while fh.read(64 << 20):
        pass
def load(*args):
    p = subprocess.run(["./phoenix", "load", m, "--json", *args], capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise RuntimeError(f"load {args}: {p.stderr[-1500:]}")
    d = json.loads(p.stdout)
    d.pop("tensors", None)
    return d
load("--device", "0")  # settles the page cache and the devices
res = {"runs": {}}
cases = {"device 0": ["--device", "0"], "device 1": ["--device", "1"], "replicate 0,1": ["--devices", "0,1"],
         "split 0,1": ["--devices", "0,1", "--spread", "split"]}
for _ in range(repeat):
    for name, args in cases.items():
        res["runs"].setdefault(name, []).append(load(*args))
sec = {k: statistics.median(r["seconds"] for r in v) for k, v in res["runs"].items()}
size = res["runs"]["device 0"][0]["bytes"]
two = sec["device 0"] + sec["device 1"]
check = load("--devices", "0,1", "--checksums")
digests = [d["sha256"] for d in check["devices"]]
res.update(seconds=sec, bytes=size, replicate_vs_two_singles=sec["replicate 0,1"] / two,
           split_vs_single_rate=sec["device 0"] / sec["split 0,1"], replicate_checksums=digests,
           checksums_equal=len(set(digests)) == 1)
for k, v in sec.items():
    print(f"{k}: {v:.4f} s ({size / v / 1e9:.2f} GB/s); runs {', '.join('%.4f' % r['seconds'] for r in res['runs'][k])}")
print(f"replicate / (device 0 + device 1 sequential): {res['replicate_vs_two_singles']:.3f} (bar <= 0.6)")
print(f"split rate / single rate: {res['split_vs_single_rate']:.3f} (bar >= 1.7)")
print(f"replicate checksums equal on both devices: {res['checksums_equal']} {digests}")
json.dump(res, open(out, "w"), indent=1)
PY
