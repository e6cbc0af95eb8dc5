#!/usr/bin/env python3
"""Run ON THE GPU MACHINE from scripts/gpu/loader2.sh: for each checkpoint, the pinned
host-to-device copy rate of the link (torch: a pinned 4 GiB host tensor copied to the device,
median of 5) and `phoenix load FILE --device 0 --json` in a fresh JVM per load (page cache warm)
under several settings, medians of --repeat, in one run; prints a table and writes JSON.
Usage: loader2.py FILE.safetensors... [--repeat 3] [--json OUT.json]"""
import json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOENIX = os.path.join(ROOT, "phoenix")

# name -> (extra CLI args, extra environment)
SETTINGS = [
    ("default", [], {}),
    # the defaults before session 7 (4 x 2 MiB slots a worker, 8 workers)
    ("before: 4 x 2 MiB slots, 8 workers", [], {"PHX_SLOT_MB": "2", "PHX_SLOTS": "4", "PHX_WORKERS": "8"}),
    ("parse before reads", ["--parse-first"], {}),
    ("12 workers", [], {"PHX_WORKERS": "12"}),
    ("16 workers, 256 MiB pinned", [], {"PHX_WORKERS": "16", "PHX_PINNED_MB": "256"}),
    # 2 slots of 4 MiB a worker: the same bytes in flight per worker as 4 x 2 MiB, in copies
    # twice as large (copy_ceiling.cu: 2 MiB copies alone reach only 0.92x of the link)
    ("4 MiB x 2 slots", [], {"PHX_SLOT_MB": "4", "PHX_SLOTS": "2"}),
    ("4 MiB x 2 slots, 12 workers", [], {"PHX_SLOT_MB": "4", "PHX_SLOTS": "2", "PHX_WORKERS": "12"}),
    ("4 MiB x 2 slots, 10 workers", [], {"PHX_SLOT_MB": "4", "PHX_SLOTS": "2", "PHX_WORKERS": "10"}),
    ("4 MiB x 3 slots", [], {"PHX_SLOT_MB": "4", "PHX_SLOTS": "3"}),
]
# LOADER2_SETTINGS="name;name" picks some of them
if os.environ.get("LOADER2_SETTINGS"):
    _want = os.environ["LOADER2_SETTINGS"].split(";")
    SETTINGS = [s for s in SETTINGS if s[0] in _want]


def warm(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def pinned_h2d(nbytes=4 << 30, runs=5):
    import torch
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.fill_(7)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    rates = []
    for _ in range(runs):
        t0 = time.perf_counter()
        dev.copy_(host, non_blocking=True)
        torch.cuda.synchronize()
        rates.append(nbytes / (time.perf_counter() - t0) / 1e9)
    del dev, host
    torch.cuda.empty_cache()
    return statistics.median(rates), rates


def load(path, args, env):
    e = dict(os.environ, **env)
    p = subprocess.run([PHOENIX, "load", path, "--device", "0", "--json", *args], env=e, capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"phoenix load {path} {args} {env}: exit {p.returncode}: {p.stderr[-2000:]}")
    d = json.loads(p.stdout)
    d["tensor_count"] = len(d.pop("tensors", {}))
    return d


def rates(runs):
    return ", ".join("%.2f" % r["gb_per_s"] for r in runs)


def main():
    files = [a for a in sys.argv[1:] if a.endswith(".safetensors")]
    for a in [a for a in files if not os.path.exists(a)]:
        print(f"{a}: missing (its generation failed: see loader2-gen.txt); left out", flush=True)
    files = [a for a in files if os.path.exists(a)]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    out_json = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    # the pinned rate of the link, measured in this run, beside the loads
    try:
        link, link_runs = pinned_h2d()
    except Exception as ex:  # no torch or no GPU (a dry run with the fake connector): no ratio
        print(f"pinned copy not measured: {ex}", flush=True)
        link, link_runs = float("nan"), []
    res = {"pinned_h2d_gbps": link, "pinned_h2d_runs": link_runs, "repeat": repeat, "checkpoints": {}}
    print(f"pinned host-to-device copy (torch, 4 GiB, median of 5): {link:.2f} GB/s "
          f"({', '.join(f'{r:.1f}' for r in link_runs)})", flush=True)
    for f in files:
        warm(f)
        load(f, [], {})  # the first load after generation settles the device and the cache
        c = {"file": f, "size": os.path.getsize(f), "settings": {}}
        # settings interleaved run by run, so a drift of the machine meets them all alike
        all_runs = {name: [] for name, _, _ in SETTINGS}
        for _ in range(repeat):
            for name, args, env in SETTINGS:
                try:
                    all_runs[name].append(load(f, args, env))
                except Exception as ex:  # one failed setting must not lose the others
                    print(f"  {name}: {ex}", flush=True)
        for name, args, env in SETTINGS:
            runs = all_runs[name]
            if not runs:
                continue
            med = statistics.median(r["gb_per_s"] for r in runs)
            c["settings"][name] = {"median_gbps": med, "ratio_to_link": med / link, "runs": runs}
            print(f"  {os.path.basename(os.path.dirname(f))} {name}: {med:.2f} GB/s ({med / link:.3f}x link); "
                  f"runs {rates(runs)}; "
                  f"parse {statistics.median(r['parse_seconds'] for r in runs) * 1e3:.1f} ms, "
                  f"plan {statistics.median(r.get('plan_seconds', 0) for r in runs) * 1e3:.1f} ms, "
                  f"read {statistics.median(r['read_seconds'] for r in runs) * 1e3:.1f} ms", flush=True)
        res["checkpoints"][f] = c
    print()
    print(f"| checkpoint | tensors | bytes | pinned H2D GB/s | " + " | ".join(n for n, _, _ in SETTINGS) + " |")
    print("|---|---|---|---|" + "---|" * len(SETTINGS))
    for f, c in res["checkpoints"].items():
        first = next(iter(c["settings"].values()))["runs"][0] if c["settings"] else {}
        cells = []
        for n, _, _ in SETTINGS:
            s = c["settings"].get(n)
            cells.append(f"{s['median_gbps']:.2f} ({s['ratio_to_link']:.3f}x)" if s else "failed")
        print(f"| {os.path.basename(os.path.dirname(f))} | {first.get('tensor_count', '')} | {first.get('bytes', '')} | "
              f"{link:.2f} | " + " | ".join(cells) + " |")
    if out_json:
        with open(out_json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
