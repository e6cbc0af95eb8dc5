#!/usr/bin/env bash
# perf-3's host bars, as a user meets them: each load a fresh JVM, started as ./phoenix starts
# it (the jar's start-up cache recorded first, as the launcher records it once per build), the
# CLIs named interleaved round by round on the same warm files (read back from disk before each round):
#   index96k   a 95,787-tensor index in 160 shards (904 MiB), `load --host` (mapped): seconds
#   moe/dense  a 6,936-tensor MoE file and a 192-tensor dense file of its size (2.15 GB each),
#              `load --host`: the MoE's extra milliseconds over the dense file
#   copy/dd    `load --host --copy` of the dense file against `dd bs=16M` of it, same round
# Each load's own time is its JSON "seconds"; the command's wall time (JVM start to exit) beside it.
# The jars' order turns every round (use an even ROUNDS for two jars).
# Usage: scripts/bench-host.sh JAR [JAR...]   (ROUNDS=5, DIR=/tmp/phx-host; AOT=0: plain JVMs;
#        PHX_THP=0: without -XX:+UseTransparentHugePages, as ./phoenix with PHX_THP=0)
# e.g.   scripts/bench-host.sh build/ab/eaedf65/samples/target/phoenix-cli-nodjl.jar samples/target/phoenix-cli.jar
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 JAR [JAR...]" >&2; exit 2; }
JAVA_HOME=$(scripts/setup.sh); export JAVA_HOME
java="$JAVA_HOME/bin/java"
dir=${DIR:-/tmp/phx-host}; rounds=${ROUNDS:-5}
gen=("$java" --enable-native-access=ALL-UNNAMED -jar "$1" gen-model)
[ -f "$dir/index96k/model.safetensors.index.json" ] || "${gen[@]}" "$dir/index96k" --size 905m --hidden 256 --heads 8 \
  --kv-heads 8 --experts 100 --expert-intermediate 16 --vocab 1000 --shards 160 >&2
[ -f "$dir/moe/model.safetensors" ] || "${gen[@]}" "$dir/moe" --size 2200m --hidden 2048 --experts 768 \
  --expert-intermediate 64 >&2
[ -f "$dir/dense/model.safetensors" ] || "${gen[@]}" "$dir/dense" --size 2050m --hidden 2048 --intermediate 5600 >&2
# the heap's pages as ./phoenix chooses them (transparent huge pages where the kernel gives them
# on request, unless PHX_THP=0)
heap=""
if [ "${PHX_THP:-1}" != 0 ] && grep -qsE '\[(always|madvise)\]' /sys/kernel/mm/transparent_hugepage/enabled; then
  heap="-XX:+UseTransparentHugePages -Xlog:pagesize*=off -Xlog:pagesize*=warning:stderr"
fi
caches=()
for jar in "$@"; do
  aot="${jar%.jar}.bench.aot"
  if [ "${AOT:-1}" != 0 ] && { [ ! -s "$aot" ] || [ "$jar" -nt "$aot" ]; }; then
    PHX_CONNECTOR=fake "$java" -XX:AOTCacheOutput="$aot" -Xlog:aot*=off -Xlog:cds*=off --enable-native-access=ALL-UNNAMED \
      -jar "$jar" train-startup > /dev/null 2>&1 || rm -f "$aot"
  fi
  caches+=("$aot")
done
python3 - "$java" "$dir" "$rounds" "${AOT:-1}" "$heap" "$@" <<'PY'
import json, os, statistics, subprocess, sys, time
java, d, rounds, aot, heap, jars = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] != "0", sys.argv[5].split(), sys.argv[6:]
def load(jar, model, *args):
    cache = jar[:-4] + ".bench.aot"
    recorded = aot and os.path.exists(cache) and os.path.getsize(cache) > 0
    pre = [f"-XX:AOTCache={cache}", "-Xlog:aot*=off", "-Xlog:cds*=off"] if recorded else []
    t = time.perf_counter()
    out = subprocess.run([java, *pre, *heap, "--enable-native-access=ALL-UNNAMED", "-jar", jar, "load", f"{d}/{model}", "--host",
                          "--json", *args], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    j = json.loads(out)
    j.pop("tensors", None)
    # the command as the user waits for it: JVM start, the CLI's start-up and warm-up, the load,
    # the JSON (its tensor list too) and the exit; "seconds" is the load alone
    j["wall_seconds"] = wall
    return j
def dd(path):
    t = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=16M"], check=True, capture_output=True)
    return os.path.getsize(path) / (time.perf_counter() - t) / 1e9
# Each file evicted from the page cache (POSIX_FADV_DONTNEED: no root needed) and read back:
# the cache then holds what readahead makes of a file read from disk, as after a download and a
# reboot. A file just written keeps the small folios of its writes instead, and mapping those
# costs far more (a 2 GB file of 256 KiB tensor writes: 145-185 ms to populate, against 4 ms
# read back), which would measure the writer, not the loader. Done before every round: this
# machine's proactive reclaim (DAMON) evicts cold page cache between rounds, and a sitting whose
# later rounds read from disk is not comparable with one whose rounds do not.
def read_back():
    for m in ("index96k", "moe", "dense"):
        for root, _, files in os.walk(f"{d}/{m}"):
            for f in files:
                fd = os.open(os.path.join(root, f), os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                while os.read(fd, 64 << 20):
                    pass
                os.close(fd)
runs = {}
for r in range(rounds):
    read_back()
    # the order of the jars turns round by round: a jar's loads that follow another jar's
    # --copy and dd found the MoE file slower to map (+5 to +15 ms of MoE extra for whichever
    # jar came second, in three sittings), which a fixed order gives to one jar only
    order = list(enumerate(jars)) if r % 2 == 0 else list(enumerate(jars))[::-1]
    for k, jar in order:
        runs.setdefault((k, "index96k"), []).append(load(jar, "index96k"))
        runs.setdefault((k, "moe"), []).append(load(jar, "moe"))
        runs.setdefault((k, "dense"), []).append(load(jar, "dense"))
        runs.setdefault((k, "copy"), []).append(load(jar, "dense", "--copy"))
        runs.setdefault((k, "dd"), []).append(dd(f"{d}/dense/model.safetensors"))
med = statistics.median
ms = lambda rs, key: med(x[key] for x in rs) * 1e3
print(f"{rounds} rounds, a fresh JVM per load{' with the jar start-up cache' if aot else ''}"
      f"{', the heap in transparent huge pages' if heap else ''}; ms unless said")
for k, jar in enumerate(jars):
    i = runs[(k, "index96k")]
    print(f"\n{jar}")
    print(f"  index96k ({i[0]['files']} files): seconds median {ms(i, 'seconds'):.0f} (runs "
          + ", ".join(f"{x['seconds'] * 1e3:.0f}" for x in i) + f"); locate {ms(i, 'locate_seconds'):.0f}, parse "
          f"{ms(i, 'parse_seconds'):.0f}, plan {ms(i, 'plan_seconds'):.0f}, allocate {ms(i, 'allocate_seconds'):.0f}, "
          f"read {ms(i, 'read_seconds'):.0f}, views {ms(i, 'view_seconds'):.0f}, cli {ms(i, 'cli_seconds'):.1f}; "
          f"the command's wall time {ms(i, 'wall_seconds'):.0f}")
    moe, dense = runs[(k, "moe")], runs[(k, "dense")]
    extra = [a["seconds"] - b["seconds"] for a, b in zip(moe, dense)]
    print(f"  moe {ms(moe, 'seconds'):.1f} (parse {ms(moe, 'parse_seconds'):.1f}, plan {ms(moe, 'plan_seconds'):.1f}, "
          f"read {ms(moe, 'read_seconds'):.1f}, views {ms(moe, 'view_seconds'):.1f}) vs dense {ms(dense, 'seconds'):.1f} "
          f"(read {ms(dense, 'read_seconds'):.1f}): MoE extra median "
          f"{med(extra) * 1e3:+.1f} ms (rounds " + ", ".join(f"{e * 1e3:+.1f}" for e in extra) + ")")
    print(f"  the command's wall time: moe {ms(moe, 'wall_seconds'):.0f}, dense {ms(dense, 'wall_seconds'):.0f}")
    copy, dds = runs[(k, "copy")], runs[(k, "dd")]
    ratio = [c["gb_per_s"] / x for c, x in zip(copy, dds)]
    print(f"  --copy {med(c['gb_per_s'] for c in copy):.2f} GB/s vs dd {med(dds):.2f}: {med(ratio):.2f}x (rounds "
          + ", ".join(f"{x:.2f}" for x in ratio) + f"); the command's wall time {ms(copy, 'wall_seconds'):.0f}")
PY
