#!/usr/bin/env bash
# scale-1's two benchmarks on this machine, each against the baseline on the same bytes in the
# same run (docs/benchmarks.md, "scale-1"):
#   1. phoenix kv bench --redis redis-cluster://...  on a 3-master cluster of Debian's redis-server
#      (loopback ports, `redis-cli --cluster create`), against Lettuce's own cluster SET/GET
#   2. phoenix load-bench s3://bench/model/  on S3Proxy (filesystem-nio2, SigV4), against the same
#      server's raw parallel ranged GETs into memory
# Usage: scripts/bench-scale1.sh [kv|s3]...   (default: both). Needs `mvn install` first
# (samples/target/phoenix-cli.jar) and the S3Proxy jar that the tests fetch
# (safetensors-loader/target/s3proxy/s3proxy.jar, or it is copied from ~/.m2).
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
modes=${*:-kv s3}
jar=${PHX_JAR:-samples/target/phoenix-cli.jar}
[ -f "$jar" ] || { echo "bench-scale1: $jar is missing: run mvn -B -ntp install -DskipTests first" >&2; exit 1; }
phx() { java --enable-native-access=ALL-UNNAMED -jar "$jar" "$@"; }
work=$(mktemp -d /tmp/phoenix-scale1.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [[ " $modes " == *" kv "* ]]; then
  nodes=()
  for i in 0 1 2; do
    p=$(free_port); d=$work/redis-$p; mkdir -p "$d"
    redis-server --port "$p" --bind 127.0.0.1 --dir "$d" --cluster-enabled yes --cluster-config-file nodes.conf \
      --save '' --appendonly no --protected-mode no --maxmemory 0 >"$d/log" 2>&1 &
    pids+=($!); nodes+=("127.0.0.1:$p")
  done
  for n in "${nodes[@]}"; do
    for _ in $(seq 50); do redis-cli -p "${n#*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$work/create.log"
  for _ in $(seq 100); do
    redis-cli -p "${nodes[0]#*:}" cluster info | grep -q 'cluster_state:ok' && break; sleep 0.1
  done
  url="redis-cluster://$(IFS=,; echo "${nodes[*]}")"
  echo "== kv bench --redis $url (3 masters, llama-3.1-8b layout, 32 MiB chunks)"
  phx kv bench --layout llama-3.1-8b --chunks 16 --repeat 5 --host --dir "$work/kv" --redis "$url" --quiet
fi

if [[ " $modes " == *" s3 "* ]]; then
  s3jar=safetensors-loader/target/s3proxy/s3proxy.jar
  [ -f "$s3jar" ] || s3jar=$HOME/.m2/repository/org/gaul/s3proxy/4.1.0/s3proxy-4.1.0-jar-with-dependencies.jar
  [ -f "$s3jar" ] || { echo "bench-scale1: no S3Proxy jar: run mvn -pl safetensors-loader test-compile dependency:copy@s3proxy" >&2; exit 1; }
  port=$(free_port)
  mkdir -p "$work/s3/bench"
  cat >"$work/s3proxy.conf" <<EOF
s3proxy.endpoint=http://127.0.0.1:$port
s3proxy.authorization=aws-v4
s3proxy.identity=bench-access
s3proxy.credential=bench-secret
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$work/s3
EOF
  # the checkpoint, written straight into the bucket's directory (filesystem-nio2 serves files as objects)
  phx gen-model "$work/s3/bench/model" --size 1g --shards 4 >/dev/null
  java -Xmx1g -jar "$s3jar" --properties "$work/s3proxy.conf" >"$work/s3proxy.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  echo "== load-bench s3://bench/model/ on S3Proxy (1 GiB, 4 shards), host memory"
  AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=bench-access AWS_SECRET_ACCESS_KEY=bench-secret \
    AWS_REGION=us-east-1 phx load-bench s3://bench/model/ --repeat 5
fi
