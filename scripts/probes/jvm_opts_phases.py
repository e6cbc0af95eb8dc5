#!/usr/bin/env python3
"""`phoenix load MODEL --host --json` with one jar under several sets of JVM options, a fresh JVM
per load, the arms' order turning every round, the model's files read back before each round.
Prints per arm the medians of the load's seconds and phases and of the command's wall time.
  python3 scripts/probes/jvm_opts_phases.py JAVA JAR ROUNDS MODEL_DIR ARM [ARM...]
  an ARM is a quoted string of JVM options, or "plain" for none; e.g.
  ... /tmp/jars/a.jar 6 /tmp/phx-host/index96k plain "-Xms1g -XX:+AlwaysPreTouch" "-XX:+UseTransparentHugePages"
(perf-3 session 21: how much of a host load is the JVM's first touch of fresh heap)"""
import json, os, shlex, statistics, subprocess, sys, time
java, jar, rounds, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
arms = {a: [] if a == "plain" else shlex.split(a) for a in sys.argv[5:]}
res = {a: [] for a in arms}
def read_back(d):
    for root, _, files in os.walk(d):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            while os.read(fd, 64 << 20):
                pass
            os.close(fd)
for r in range(rounds):
    read_back(model)
    order = list(arms)[r % len(arms):] + list(arms)[:r % len(arms)]
    for a in order:
        t = time.perf_counter()
        out = subprocess.run([java, *arms[a], "--enable-native-access=ALL-UNNAMED", "-jar", jar, "load", model, "--host",
                              "--json"], check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        j.pop("tensors", None)
        j["wall"] = time.perf_counter() - t
        res[a].append(j)
for a, rs in res.items():
    m = lambda k: statistics.median(x[k] for x in rs) * 1e3
    print(f"{a}: seconds {m('seconds'):.0f} ({','.join('%.0f' % (x['seconds'] * 1e3) for x in rs)}) locate {m('locate_seconds'):.0f}"
          f" parse {m('parse_seconds'):.0f} plan {m('plan_seconds'):.0f} allocate {m('allocate_seconds'):.0f}"
          f" read {m('read_seconds'):.0f} views {m('view_seconds'):.0f}; wall {m('wall'):.0f}")
