#!/usr/bin/env bash
# Many small tensors against few large ones, same machine, same run: generates (once) a dense
# Llama-shaped checkpoint and a mixture-of-experts one of about the same size, then loads each
# REPEAT times in a fresh JVM per load (alternating, page cache warm) for each target, and
# prints medians of the whole load and of its phases.
#   scripts/bench-many-tensors.sh [DIR] [SIZE]     (defaults: /tmp/phx-many 1700m; REPEAT=5)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/phx-many}; size=${2:-1700m}; repeat=${REPEAT:-5}
[ -f "$dir/moe/model.safetensors" ] || ./phoenix gen-model "$dir/moe" --size "$size" --hidden 2048 --experts 128 \
  --expert-intermediate 128 >&2
[ -f "$dir/dense/model.safetensors" ] || ./phoenix gen-model "$dir/dense" --size "$size" --hidden 2048 \
  --intermediate 5632 >&2
python3 - "$dir" "$repeat" <<'PY'
import json, statistics, subprocess, sys
d, repeat = sys.argv[1], int(sys.argv[2])
targets = [("--host (mapped)", ["--host"]), ("--host --copy", ["--host", "--copy"]),
           ("--device 0", ["--device", "0"]), ("--device 0 --parse-first", ["--device", "0", "--parse-first"])]
runs = {}
for m in ("moe", "dense"):
    with open(f"{d}/{m}/model.safetensors", "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass
for i in range(repeat):
    for name, args in targets:
        for m in ("moe", "dense"):
            out = subprocess.run(["./phoenix", "load", f"{d}/{m}", "--json", *args], check=True, capture_output=True,
                                 text=True).stdout
            j = json.loads(out)
            j["n"] = len(j.pop("tensors"))
            runs.setdefault((name, m), []).append(j)
med = lambda rs, k: statistics.median(r.get(k, 0) for r in rs)
print("| target | checkpoint | tensors | GB | GB/s (median) | runs | parse ms | plan ms | read ms | views ms | MoE/dense |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, _ in targets:
    for m in ("moe", "dense"):
        rs = runs[(name, m)]
        ratio = med(runs[(name, "moe")], "gb_per_s") / med(runs[(name, "dense")], "gb_per_s")
        print(f"| {name} | {m} | {rs[0]['n']} | {rs[0]['bytes'] / 1e9:.2f} | {med(rs, 'gb_per_s'):.2f} | "
              f"{', '.join('%.2f' % r['gb_per_s'] for r in rs)} | {med(rs, 'parse_seconds') * 1e3:.1f} | "
              f"{med(rs, 'plan_seconds') * 1e3:.1f} | {med(rs, 'read_seconds') * 1e3:.1f} | "
              f"{med(rs, 'view_seconds') * 1e3:.1f} | {ratio:.3f} |" if m == "moe" else
              f"| | {m} | {rs[0]['n']} | {rs[0]['bytes'] / 1e9:.2f} | {med(rs, 'gb_per_s'):.2f} | "
              f"{', '.join('%.2f' % r['gb_per_s'] for r in rs)} | {med(rs, 'parse_seconds') * 1e3:.1f} | "
              f"{med(rs, 'plan_seconds') * 1e3:.1f} | {med(rs, 'read_seconds') * 1e3:.1f} | "
              f"{med(rs, 'view_seconds') * 1e3:.1f} | |")
PY
