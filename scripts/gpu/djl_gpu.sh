#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare-djl.sh here): DJL computing on the GPU
# (issue djl-gpu). Builds DJL's JNI for the machine's libtorch (djl-jni-build.sh), then
#   correctness  the fixtures through `phoenix djl-run --device 0` against transformers on the
#                same GPU in the same dtype: last-position logits and 16 greedy tokens
#   bench8b      a Llama-3.1-8B-shaped random bf16 checkpoint in 4 shards, page cache warm:
#                loadModel() to the first token (Phoenix, DJL's own route, transformers),
#                decode tokens/s (Phoenix's blocks against transformers' generate)
# Usage: scripts/gpu/djl_gpu.sh [correctness] [bench8b]   (default: both). Output in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
status=0
step() { echo; echo "=== $* ($(date +%T))"; }
modes=${*:-correctness bench8b}

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"

[ -x .gpu/jre/bin/java ] || tar -C .gpu -xJf .gpu/jre.tar.xz

step "DJL JNI for this libtorch"
OUT="$out" timeout 600 bash scripts/gpu/djl-jni-build.sh > "$out/jni-build.txt" 2>&1 || { tail -20 "$out/jni-build.txt"; exit 1; }
tail -8 "$out/jni-build.txt"
# shellcheck disable=SC1091
. build/djl-jni/env.sh
export DJL_CACHE_DIR=$PWD/build/djl-cache OPT_OUT_TRACKING=true
java=.gpu/jre/bin/java
jar=.gpu/phoenix-cli-full.jar
phx() { "$java" --enable-native-access=ALL-UNNAMED -cp "$jar" io.phxfs.cli.PhoenixCli "$@"; }
ref=scripts/gpu/djl_gpu_reference.py

if [[ " $modes " == *" correctness "* ]]; then
  step "correctness: djl-run --device 0 against transformers on the same GPU"
  ids=1,7,42,300,5,9,11,13,100,200,250,17
  : > "$out/correctness.jsonl"
  for c in tiny-llama:bfloat16 tiny-gpt2:bfloat16 tiny-gpt2-sharded:bfloat16 tiny-chat-llama:bfloat16 tiny-chat-gpt2:bfloat16 \
           tiny-llama:float32 tiny-gpt2-sharded:float32 tiny-chat-llama:float16; do
    f=${c%%:*}; dt=${c##*:}; d=.gpu/fixtures/$f; tag=$f-$dt
    timeout 300 python3 $ref reference "$d" "$dt" $ids 16 "$out/ref-$tag.json" > "$out/ref-$tag.log" 2>&1 \
      || { echo "$tag: transformers failed"; tail -5 "$out/ref-$tag.log"; status=1; continue; }
    timeout 300 phx djl-run "$d" --device 0 --dtype "$dt" --ids $ids --generate 16 --repeat 1 --json --json-last-logits \
      > "$out/ours-$tag.json" 2> "$out/ours-$tag.log" \
      || { echo "$tag: djl-run failed"; tail -20 "$out/ours-$tag.log"; status=1; continue; }
    python3 $ref compare "$out/ref-$tag.json" "$out/ours-$tag.json" | tee -a "$out/correctness.jsonl" || status=1
  done
fi

if [[ " $modes " == *" bench8b "* ]]; then
  m=/tmp/llama8b; f16=/tmp/llama8b-f16
  step "bench8b: writing a Llama-3.1-8B-shaped bf16 checkpoint (4 shards)"
  [ -f $m/config.json ] || timeout 600 phx gen-model $m --size 16g --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 \
      --vocab 128256 --context 8192 --shards 4 --tokenizer .gpu/fixtures/tiny-chat-llama 2>&1 | tail -3
  du -sh $m; ls $m
  cat $m/*.safetensors > /dev/null # page cache warm
  ids=1,2,3,4,5,6,7,8
  step "bench8b: Phoenix (djl-run --device 0, bf16), twice"
  for r in 1 2; do
    timeout 600 phx djl-run $m --device 0 --ids $ids --generate 64 --repeat 3 --json --json-last-logits > "$out/8b-phoenix-$r.json" 2> "$out/8b-phoenix-$r.log" \
      || { echo "phoenix run $r failed"; tail -20 "$out/8b-phoenix-$r.log"; status=1; }
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in ('load_seconds','first_token_seconds','tokens_per_s','tokens_per_s_min','tokens_per_s_max','device','dtype')}, 'generated', d['generated'][:8])" "$out/8b-phoenix-$r.json" || true
  done
  step "bench8b: transformers from_pretrained(device_map=cuda) and generate, twice"
  for r in 1 2; do
    timeout 600 python3 $ref bench $m $ids 64 "$out/8b-transformers-$r.json" 2> "$out/8b-transformers-$r.log" || { tail -5 "$out/8b-transformers-$r.log"; status=1; }
  done
  step "bench8b: DJL's own route (NDList.decode into host, then toDevice) against Phoenix on the same float16 files"
  [ -d $f16 ] || timeout 600 python3 $ref to_f16 $m $f16 2000000000
  ls $f16 | head -20; cat $f16/*.safetensors > /dev/null
  for r in 1 2; do
    for p in decode-gpu phoenix-gpu; do
      timeout 600 phx djl-load-bench $f16 --child $p 2> "$out/8b-$p-$r.log" | tee -a "$out/8b-routes.txt" || { tail -5 "$out/8b-$p-$r.log"; status=1; }
    done
  done
  timeout 600 phx djl-load-bench $m --child phoenix-gpu 2>> "$out/8b-phoenix-gpu-bf16.log" | sed 's/^/bf16 files: /' | tee -a "$out/8b-routes.txt"
fi
echo; echo "djl_gpu.sh: status $status"
exit $status
