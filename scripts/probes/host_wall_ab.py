#!/usr/bin/env python3
"""`phoenix load --host --json` with each JAR on bench-host.sh's files, a fresh JVM per load (the
jar's start-up cache JAR minus .jar plus .bench.aot, as bench-host.sh records it), the jars'
order turning every round, the files read back before each round. Prints per jar and model the
medians of the load's own time (JSON "seconds"), of the command's wall time (JVM start to exit)
and of the parse, and the MoE file's extra over the dense one.
  python3 scripts/probes/host_wall_ab.py ROUNDS MODELS JAR [JAR...]   e.g. 6 moe,dense,index96k a.jar b.jar
  An arm JAR::OPTIONS starts that jar with these JVM options added (e.g. a.jar::-XX:+UseTransparentHugePages).
  (JAVA_HOME as scripts/setup.sh prints it; files under /tmp/phx-host, made by bench-host.sh)"""
import json, os, statistics, subprocess, sys, time
java = os.environ["JAVA_HOME"] + "/bin/java"
rounds=int(sys.argv[1]); models=sys.argv[2].split(","); jars=sys.argv[3:]
d = "/tmp/phx-host"
def load(arm, model):
    jar, _, opts = arm.partition("::")
    aot = jar[:-4] + ".bench.aot"
    t=time.perf_counter()
    p = subprocess.run([java, f"-XX:AOTCache={aot}", "-Xlog:aot*=off", "-Xlog:cds*=off", *opts.split(),
        "--enable-native-access=ALL-UNNAMED", "-jar", jar, "load", f"{d}/{model}", "--host", "--json"], capture_output=True, text=True, check=True)
    w=time.perf_counter()-t
    j=json.loads(p.stdout)
    return j["seconds"]*1e3, w*1e3, j["parse_seconds"]*1e3
def read_back():
    for m in models:
        for root, _, files in os.walk(f"{d}/{m}"):
            for f in files:
                fd = os.open(os.path.join(root, f), os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                while os.read(fd, 64 << 20): pass
                os.close(fd)
res={}
for r in range(rounds):
    read_back()
    order=jars if r%2==0 else jars[::-1]
    for v in order:
        for m in models:
            res.setdefault((v,m),[]).append(load(v,m))
med=statistics.median
for v in jars:
    line=f"{os.path.basename(v):14s}"
    print(v)
    for m in models:
        x=res[(v,m)]
        line+=f" | {m}: s {med(a[0] for a in x):6.1f} wall {med(a[1] for a in x):5.0f} parse {med(a[2] for a in x):5.1f}"
    if "moe" in models and "dense" in models:
        ex=[a[0]-b[0] for a,b in zip(res[(v,'moe')],res[(v,'dense')])]
        line+=f" | extra {med(ex):+.1f} ({', '.join(f'{e:+.0f}' for e in ex)})"
    print(line, flush=True)
