#!/usr/bin/env bash
# Guided decoding's cost per step on real vocabularies (cl100k_base, o200k_base from the tiktoken npm
# package): scripts/probes/GuidedMaskBench.java. Builds the CLI jar when it is missing; needs npm.
# Usage: scripts/bench-guided.sh
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
"$JAVA_HOME/bin/java" -cp samples/target/phoenix-cli.jar scripts/probes/GuidedMaskBench.java \
  "$dir/package/encoders/cl100k_base.json" "$dir/package/encoders/o200k_base.json"
