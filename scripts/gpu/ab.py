#!/usr/bin/env python3
"""Run ON THE GPU MACHINE from scripts/gpu/ab.sh: loads the same checkpoints with every prepared
revision's CLI, interleaved round by round in one run, beside the pinned host-to-device rate.
Usage: ab.py --order .gpu/ab/order [--rounds 5] [--checkpoints st-dense,gen-dense,st-moe] [--json F]
             [--target device|host]   (host: `load --host`, the files as their writer left them)
             [--settings "NAME:VAR=V,VAR=V;NAME:..."]   (the last revision again under each setting's
             environment, as one more variant NAME in the rounds: e.g. "w12:PHX_WORKERS=12"; the
             setting AOT=1 runs the JVM with the revision's start-up cache as ./phoenix does since
             733fdcf (for a load: its classes, not its method profiles), AOT=replay with the
             profiles replayed too (as ./phoenix did before; the "AOT=1" of earlier records), JVM=FLAGS adds JVM options and ARGS=OPTIONS options of `phoenix load`, each separated
             by spaces; ./phoenix also gives -XX:+UseTransparentHugePages since 7634442 where the
             kernel offers huge pages: "AOT=1,JVM=-XX:+UseTransparentHugePages" starts a JVM as it does)"""
import json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAVA = os.path.join(ROOT, ".gpu", "jre", "bin", "java")
WORK = os.environ.get("AB_WORK", "/tmp/ab-checkpoints")
PHASES = ["cli", "locate", "parse", "plan", "allocate", "read", "view", "other"]


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


VARIANTS = {}  # variant name -> (revision, environment)


def aot_cache(rev, lib, jar):
    """The revision's JDK start-up cache, recorded once as ./phoenix records it (train-startup with
    the fake connector); None when recording fails (the variant then runs without it)."""
    cache = os.path.join(ROOT, ".gpu", "ab", rev, "cli.aot")
    if not os.path.exists(cache):
        e = dict(os.environ, PHX_LIBRARY_PATH=lib, PHX_CONNECTOR="fake")
        p = subprocess.run([JAVA, f"-XX:AOTCacheOutput={cache}", "-Xlog:aot*=off", "-Xlog:cds*=off",
                            "--enable-native-access=ALL-UNNAMED", "-cp", jar, "io.phxfs.cli.PhoenixCli", "train-startup"],
                           env=e, capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or not os.path.exists(cache):
            print(f"  {rev}: start-up cache not recorded (exit {p.returncode}): {p.stderr[-500:]}", flush=True)
            open(cache, "w").close()
    return cache if os.path.getsize(cache) > 0 else None


def cli(rev, *args, env=None, timeout=120):
    return cli_timed(rev, *args, env=env, timeout=timeout)[0]


def cli_timed(rev, *args, env=None, timeout=120):
    """cli's stdout, and the command's wall time in seconds (JVM start to exit, as a user waits for it)."""
    name = rev
    rev, venv = VARIANTS.get(rev, (rev, {}))
    venv = dict(venv)
    aot_setting = venv.pop("AOT", "0")
    aot = aot_setting not in ("", "0")  # a setting AOT=1: the JVM as ./phoenix starts it
    jvm = venv.pop("JVM", "").split()  # a setting JVM=FLAGS: JVM options, separated by spaces
    extra = venv.pop("ARGS", "").split()  # a setting ARGS=OPTIONS: options of `phoenix load`
    if args and args[0] == "load":
        args = (*args, *extra)
    lib = os.path.join(ROOT, "build", "ab", rev, "build", "libphoenix.so")
    jar = os.path.join(ROOT, ".gpu", "ab", rev, "phoenix-cli.jar")
    e = dict(os.environ, PHX_LIBRARY_PATH=lib, **venv, **(env or {}))
    cache = aot_cache(rev, lib, jar) if aot else None
    pre = [f"-XX:AOTCache={cache}", "-Xlog:aot*=off", "-Xlog:cds*=off"] if cache else []
    if cache and aot_setting != "replay" and args and args[0] in ("load", "load-bench"):
        pre += ["-XX:+UnlockDiagnosticVMOptions", "-XX:+IgnoreUnrecognizedVMOptions", "-XX:-AOTReplayTraining"]
    cmd = [JAVA, *pre, *jvm, "--enable-native-access=ALL-UNNAMED", "-cp", jar, "io.phxfs.cli.PhoenixCli", *args]
    t = time.perf_counter()
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    keep = os.environ.get("AB_STDERR")  # the children's stderr, each under the run it came from
    if keep and p.stderr:
        with open(keep, "a") as f:
            f.write(f"== {name} {' '.join(args)}\n{p.stderr}")
    if p.returncode != 0:
        raise RuntimeError(f"{rev}: {' '.join(args)}: exit {p.returncode}: {p.stderr[-1500:]}")
    return p.stdout, wall


def llama_layer(l):
    import torch
    h, i, kv = 4096, 14336, 1024
    p = f"model.layers.{l}."
    z = lambda *s: torch.zeros(*s, dtype=torch.bfloat16)
    return {p + "self_attn.q_proj.weight": z(h, h), p + "self_attn.k_proj.weight": z(kv, h),
            p + "self_attn.v_proj.weight": z(kv, h), p + "self_attn.o_proj.weight": z(h, h),
            p + "mlp.gate_proj.weight": z(i, h), p + "mlp.up_proj.weight": z(i, h), p + "mlp.down_proj.weight": z(h, i),
            p + "input_layernorm.weight": z(h), p + "post_attention_layernorm.weight": z(h)}


def make(kind, last_rev):
    d = os.path.join(WORK, kind)
    if os.path.exists(os.path.join(d, "done")):
        return d
    os.makedirs(d, exist_ok=True)
    if kind == "st-dense":
        from safetensors.torch import save_file
        wm, total = {}, 0
        for s in range(4):
            name = f"model-{s + 1:05d}-of-00004.safetensors"
            t = {}
            for l in range(3 * s, 3 * s + 3):
                t.update(llama_layer(l))
            save_file(t, os.path.join(d, name), metadata={"format": "pt"})
            for k, v in t.items():
                wm[k] = name
                total += v.numel() * 2
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    elif kind == "gen-dense":
        cli(last_rev, "gen-model", d, "--size", "5g", "--shards", "4", timeout=300)
    elif kind == "st-moe":
        import torch
        from safetensors.torch import save_file
        t = {"model.embed_tokens.weight": torch.zeros(32000, 4096, dtype=torch.bfloat16)}
        for l in range(24):
            for e in range(65):
                for w in ("gate_proj", "up_proj", "down_proj"):
                    t[f"model.layers.{l}.mlp.experts.{e}.{w}.weight"] = torch.zeros(128, 4096, dtype=torch.bfloat16)
        save_file(t, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    else:
        raise SystemExit(f"unknown checkpoint {kind}")
    open(os.path.join(d, "done"), "w").close()
    return d


def warm(d):
    for n in sorted(os.listdir(d)):
        with open(os.path.join(d, n), "rb", buffering=0) as f:
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


def phases(r):
    """Each phase's seconds, and what no phase holds: by the new keys where the revision has them."""
    ph = {k: r.get(k + "_seconds") for k in PHASES if (k + "_seconds") in r}
    if "other_seconds" in r:
        seq = ["cli", "locate", "allocate", "read", "other"] + ([] if r.get("reads_overlap_parse") else ["parse", "plan", "view"])
    else:  # before every millisecond had a phase: what the five phases leave
        seq = ["parse", "plan", "allocate", "read", "view"]
    ph["unattributed"] = r["seconds"] - sum(r.get(k + "_seconds", 0) for k in seq)
    # the allocate phase and the read taken apart, where the revision reports them
    for k, v in (r.get("allocate_split") or {}).items():
        ph["allocate." + k.removesuffix("_seconds")] = v
    for k, v in (r.get("read_split") or {}).items():
        ph["read." + k.removesuffix("_seconds")] = v
    return ph


def main():
    order = [l.split(" ", 1) for l in open(arg("--order", ".gpu/ab/order")).read().splitlines() if l.strip()]
    revs = [o[0] for o in order]
    rounds = int(arg("--rounds", "5"))
    kinds = arg("--checkpoints", "st-dense,gen-dense,st-moe").split(",")
    # --target host: loads into host memory (`--host`), the files as their writer left them in
    # the page cache; the ratio to the link is then only a scale
    target = ["--host"] if arg("--target", "device") == "host" else ["--device", "0"]
    last = revs[-1]  # the revision the settings run, and the one that writes gen-model's checkpoint
    for spec in [x for x in arg("--settings", "").split(";") if x.strip()]:
        vname, _, assigns = spec.partition(":")
        venv = dict(a.split("=", 1) for a in assigns.split(",") if a)
        VARIANTS[vname] = (last, venv)
        order.append([vname, f"{last} with {' '.join(f'{k}={v}' for k, v in venv.items())}"])
        revs.append(vname)
    res = {"revisions": dict(order), "rounds": rounds, "checkpoints": {}}
    for name, desc in order:
        print(f"revision {name}: {desc}", flush=True)
    dirs = {}
    for k in kinds:
        t0 = time.time()
        dirs[k] = make(k, last)
        print(f"checkpoint {k}: {dirs[k]} ({sum(os.path.getsize(os.path.join(dirs[k], n)) for n in os.listdir(dirs[k])) / 1e9:.2f} GB,"
              f" {time.time() - t0:.0f} s to write)", flush=True)
    link, link_runs = pinned_h2d()
    res["pinned_h2d_gbps"], res["pinned_h2d_runs"] = link, link_runs
    print(f"pinned host-to-device copy (torch, 4 GiB, median of 5): {link:.2f} GB/s ({', '.join(f'{r:.1f}' for r in link_runs)})",
          flush=True)
    for k in kinds:
        d = dirs[k]
        warm(d)
        sums = {}
        for rev in revs:  # one untimed load each: the checksums must agree, and the device settles
            try:
                j = json.loads(cli(rev, "load", d, *target, "--json", "--checksums"))
                sums[rev] = {n: t.get("sha256") for n, t in j["tensors"].items()}
            except Exception as ex:
                print(f"  {k} {rev}: checksum load failed: {ex}", flush=True)
        agree = len({json.dumps(s, sort_keys=True) for s in sums.values()}) == 1
        runs = {rev: [] for rev in revs}
        for rnd in range(rounds):
            # the order turns every round: on the build machine a fixed order gave whichever
            # came second a disadvantage (bench-host.sh, perf-3 session 19)
            for rev in (revs if rnd % 2 == 0 else revs[::-1]):
                try:
                    out, wall = cli_timed(rev, "load", d, *target, "--json")
                    j = json.loads(out)
                    j.pop("tensors", None)
                    j["wall_seconds"] = wall
                    runs[rev].append(j)
                except Exception as ex:
                    print(f"  {k} {rev}: {ex}", flush=True)
        c = {"dir": d, "checksums_agree": agree, "revisions": {}}
        print(f"\n{k}: {d}; checksums of {len(sums)} revisions {'agree' if agree else 'DIFFER'}")
        base = revs[0]
        for rev in revs:
            rs = runs[rev]
            if not rs:
                continue
            med = statistics.median(r["gb_per_s"] for r in rs)
            # the libphoenix transfer alone (first task taken to last ended), where reported
            xfer = [r["bytes"] / r["read_split"]["transfer_seconds"] / 1e9 for r in rs if (r.get("read_split") or {}).get("transfer_seconds")]
            phs = [phases(r) for r in rs]
            ph_med = {p: statistics.median(x[p] for x in phs if p in x) for p in phs[0]}
            line = (f"  {rev:>8}: {med:6.2f} GB/s ({med / link:.3f}x link) runs {', '.join('%.1f' % r['gb_per_s'] for r in rs)};"
                    f" ms: " + ", ".join(f"{p} {v * 1e3:.1f}" for p, v in ph_med.items()))
            line += f"\n            the command's wall time (JVM start to exit): {statistics.median(r['wall_seconds'] for r in rs) * 1e3:.0f} ms"
            if xfer:
                xm = statistics.median(xfer)
                line += f"\n            transfer alone (libphoenix's batch times): {xm:.2f} GB/s ({xm / link:.3f}x link)"
            entry = {"median_gbps": med, "ratio_to_link": med / link, "phases_median_s": ph_med, "runs": rs,
                     "wall_seconds_median": statistics.median(r["wall_seconds"] for r in rs),
                     "transfer_gbps_median": statistics.median(xfer) if xfer else None}
            i = revs.index(rev)
            # against the first revision and, from the third on, the one before it
            for key, other in (("vs_first", base), ("vs_previous", revs[i - 1] if i > 1 else None)):
                if i == 0 or other is None or not runs[other]:
                    continue
                ratios = [a["gb_per_s"] / b["gb_per_s"] for a, b in zip(rs, runs[other])]
                entry[key] = {"against": other, "median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
                line += f"\n            {rev} / {other}: {statistics.median(ratios):.3f}x (rounds {min(ratios):.3f}..{max(ratios):.3f})"
            c["revisions"][rev] = entry
            print(line, flush=True)
        res["checkpoints"][k] = c
    out = arg("--json", None)
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
