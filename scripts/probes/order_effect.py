#!/usr/bin/env python3
"""Does a host load of the MoE file cost more right after another process's `load --host --copy`
(2 GB faulted into fresh memory, then freed at exit) or a `dd` of the dense file, than right
after the files are read back? bench-host.sh found whichever jar came second in a round paying
11-20 ms more MoE extra. Per round: read-back; MoE + dense loads; a --copy load; MoE + dense;
dd; MoE + dense. Prints the medians of each step's seconds and phases (ms).
  python3 scripts/probes/order_effect.py JAR [ROUNDS]   (bench-host.sh's files in /tmp/phx-host,
  its start-up cache JAR minus .jar plus .bench.aot; JAVA_HOME as scripts/setup.sh prints it)"""
import json, os, statistics, subprocess, sys

java = os.environ["JAVA_HOME"] + "/bin/java"
jar = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
aot = jar[:-4] + ".bench.aot"
d = "/tmp/phx-host"


def load(model, *args):
    out = subprocess.run([java, f"-XX:AOTCache={aot}", "-Xlog:aot*=off", "-Xlog:cds*=off",
                          "--enable-native-access=ALL-UNNAMED", "-jar", jar, "load", f"{d}/{model}", "--host",
                          "--json", *args], capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    return {k.replace("_seconds", ""): j[k] * 1e3 for k in j if k.endswith("seconds")}


def read_back():
    for m in ("moe", "dense"):
        fd = os.open(f"{d}/{m}/model.safetensors", os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 64 << 20):
            pass
        os.close(fd)


steps = {"after read-back": [], "after --copy": [], "after dd": []}
for r in range(rounds):
    read_back()
    steps["after read-back"].append((load("moe"), load("dense")))
    load("dense", "--copy")
    steps["after --copy"].append((load("moe"), load("dense")))
    subprocess.run(["dd", f"if={d}/dense/model.safetensors", "of=/dev/null", "bs=16M"], capture_output=True, check=True)
    steps["after dd"].append((load("moe"), load("dense")))
med = statistics.median
print(f"{jar}, {rounds} rounds, medians in ms")
for name, v in steps.items():
    extra = [m["seconds"] - x["seconds"] for m, x in v]
    print(f"{name}: MoE extra {med(extra):+.1f} (rounds " + ", ".join(f"{e:+.1f}" for e in extra) + ")")
    for who, i in (("moe", 0), ("dense", 1)):
        print(f"  {who}: " + ", ".join(f"{k} {med(p[i][k] for p in v):.1f}"
                                         for k in ("seconds", "parse", "plan", "read", "view")))
