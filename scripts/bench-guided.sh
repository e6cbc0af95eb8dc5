#!/usr/bin/env bash
# Guided decoding's cost per step on real vocabularies (cl100k_base, o200k_base from the tiktoken npm
# package): scripts/probes/GuidedMaskBench.java. Builds the CLI jar when it is missing; needs npm.
# Usage: scripts/bench-guided.sh [JAR...]   with jars (builds of other revisions), an A/B: each
# jar in turn, ROUNDS (default 2) times, in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME
[ -f samples/target/phoenix-cli.jar ] || mvn -B -q -ntp -DskipTests install
dir=build/guided-bench
mkdir -p "$dir"
if [ ! -f "$dir/package/encoders/o200k_base.json" ]; then
  (cd "$dir" && npm pack tiktoken@1.0.22 --silent >/dev/null && tar xzf tiktoken-1.0.22.tgz)
fi
nproc; uptime
jars=("$@")
[ ${#jars[@]} -gt 0 ] || jars=(samples/target/phoenix-cli.jar)
rounds=${ROUNDS:-1}
[ ${#jars[@]} -eq 1 ] || rounds=${ROUNDS:-2}
for ((r = 1; r <= rounds; r++)); do
  for jar in "${jars[@]}"; do
    [ ${#jars[@]} -eq 1 ] || echo "== round $r: $jar"
    "$JAVA_HOME/bin/java" -cp "$jar" scripts/probes/GuidedMaskBench.java \
      "$dir/package/encoders/cl100k_base.json" "$dir/package/encoders/o200k_base.json"
  done
done
