#!/usr/bin/env bash
# Guided decoding's cost per step on real vocabularies (cl100k_base, o200k_base from the tiktoken npm
# package): scripts/probes/GuidedMaskBench.java. Needs `mvn install` first (the CLI jar) and npm.
# Usage: scripts/bench-guided.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(scripts/setup.sh)
dir=build/guided-bench
mkdir -p "$dir"
if [ ! -f "$dir/package/encoders/o200k_base.json" ]; then
  (cd "$dir" && npm pack tiktoken@1.0.22 --silent >/dev/null && tar xzf tiktoken-1.0.22.tgz)
fi
nproc; uptime
"$JAVA_HOME/bin/java" -cp samples/target/phoenix-cli.jar scripts/probes/GuidedMaskBench.java \
  "$dir/package/encoders/cl100k_base.json" "$dir/package/encoders/o200k_base.json"
