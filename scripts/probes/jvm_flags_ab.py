#!/usr/bin/env python3
"""The MoE and dense host loads of scripts/bench-host.sh (its files under DIR, default
/tmp/phx-host: run that script once first) under JVM flag variants of one jar, alternated round
by round, each load a fresh JVM with the jar's start-up cache (JAR minus .jar plus .bench.aot,
as bench-host.sh records it; the variant "noaot" runs without it). Prints each variant's median
seconds and phases, the MoE's extra over dense, and the process's wall time.
  python3 scripts/probes/jvm_flags_ab.py ROUNDS JAR VARIANT...
  e.g. python3 scripts/probes/jvm_flags_ab.py 6 /tmp/jars/x.jar base "-XX:TieredStopAtLevel=1" noaot
A variant is "base" (no flags), "noaot", or JVM flags separated by spaces."""
import json, os, statistics as st, subprocess, sys, time

java = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
d = os.environ.get("DIR", "/tmp/phx-host")
rounds, jar, variants = int(sys.argv[1]), sys.argv[2], [v.split() for v in sys.argv[3:]]


def load(flags, model):
    cache = jar[:-4] + ".bench.aot"
    aot = [] if "noaot" in flags else [f"-XX:AOTCache={cache}", "-Xlog:aot*=off", "-Xlog:cds*=off"]
    extra = [f for f in flags if f not in ("noaot", "base")]
    t = time.perf_counter()
    out = subprocess.run([java, *aot, *extra, "--enable-native-access=ALL-UNNAMED", "-jar", jar, "load",
                          f"{d}/{model}", "--host", "--json"], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    j = json.loads(out)
    j.pop("tensors", None)
    j["wall"] = wall
    return j


runs = {}
for r in range(rounds):
    for i, v in enumerate(variants):
        for m in ("moe", "dense"):
            runs.setdefault((i, m), []).append(load(v, m))
for i, v in enumerate(variants):
    moe, dense = runs[(i, "moe")], runs[(i, "dense")]
    extra = [(a["seconds"] - b["seconds"]) * 1e3 for a, b in zip(moe, dense)]
    ms = lambda rs, k: st.median(x[k] for x in rs) * 1e3
    print(f"{' '.join(v)}: moe {ms(moe, 'seconds'):.1f} (parse {ms(moe, 'parse_seconds'):.1f} plan "
          f"{ms(moe, 'plan_seconds'):.1f} views {ms(moe, 'view_seconds'):.1f}) dense {ms(dense, 'seconds'):.1f} ms; "
          f"MoE extra median {st.median(extra):+.1f} ms (rounds {', '.join(f'{e:+.0f}' for e in extra)}); "
          f"process wall moe {ms(moe, 'wall'):.0f}, dense {ms(dense, 'wall'):.0f} ms")
