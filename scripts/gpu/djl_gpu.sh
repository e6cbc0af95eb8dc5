#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare-djl.sh here): DJL computing on the GPU
# (issue djl-gpu). Builds DJL's JNI for the machine's libtorch (djl-jni-build.sh), then
#   correctness  the fixtures through `phoenix djl-run --device 0` against transformers on the
#                same GPU in the same dtype: last-position logits and 16 greedy tokens
#   bench8b      a Llama-3.1-8B-shaped random bf16 checkpoint in 4 shards, page cache warm:
#                loadModel() to the first token (Phoenix, DJL's own route, transformers),
#                decode tokens/s (Phoenix's blocks against transformers' generate)
#   serve8k      phoenix serve-bench --device 0 on the 8B-shaped checkpoint, 8,000 shared prefix tokens
#                (SERVE_TIERS, SERVE_CONC=1,8, SERVE_REQUESTS=8 for issue serve's batching figure; the
#                engine's own trace of each request, PHX_SERVE_TRACE=1, is printed after the table), then
#                serve-bench --device 0 on the tiny-chat-llama fixture: each tier's greedy text against the tier off's
#   routes       only the load routes of bench8b (DJL's decode+toDevice, Phoenix) on its checkpoint
# Usage: scripts/gpu/djl_gpu.sh [correctness] [bench8b] [routes]   (default: correctness bench8b). Output in $OUT.
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
OUT= timeout 600 bash scripts/gpu/djl-jni-build.sh > "$out/jni-build.txt" 2>&1 || { tail -20 "$out/jni-build.txt"; exit 1; }
tail -8 "$out/jni-build.txt"
# shellcheck disable=SC1091
. build/djl-jni/env.sh
export DJL_CACHE_DIR=$PWD/build/djl-cache OPT_OUT_TRACKING=true
java=.gpu/jre/bin/java
jar=.gpu/phoenix-cli-full.jar
phx=("$java" --enable-native-access=ALL-UNNAMED -cp "$jar" io.phxfs.cli.PhoenixCli)
# per-case files go to $work and come back as one archive (the device call returns few files)
work=/tmp/djl-gpu-work; rm -rf "$work"; mkdir -p "$work"
trap 'tar -C /tmp -czf "$out/djl-gpu-details.tgz" djl-gpu-work 2>/dev/null' EXIT
ref=scripts/gpu/djl_gpu_reference.py
# the checkpoints: .gpu/fixtures (prepare-djl.sh), or FIXTURES=testdata/fixtures where the carry has no room for a copy
fixtures=${FIXTURES:-.gpu/fixtures}

if [[ " $modes " == *" correctness "* ]]; then
  step "correctness: djl-run --device 0 against transformers on the same GPU"
  ids=1,7,42,300,5,9,11,13,100,200,250,17
  : > "$out/correctness.jsonl"
  cases="tiny-llama:bfloat16 tiny-gpt2:bfloat16 tiny-gpt2-sharded:bfloat16 tiny-chat-llama:bfloat16 tiny-chat-gpt2:bfloat16
         tiny-llama:float32 tiny-gpt2-sharded:float32 tiny-chat-llama:float16
         tiny-llama3:bfloat16 tiny-llama-bias:bfloat16 tiny-llama-linear:bfloat16 tiny-qwen2:bfloat16 tiny-qwen3:bfloat16
         tiny-mistral:bfloat16 tiny-qwen2-yarn:bfloat16 tiny-phi3:bfloat16 tiny-phi3-longrope:bfloat16 tiny-qwen3:float32"
  # CASES=... runs those only (the Llama family's members, say)
  cases=${CASES:-$cases}
  timeout 400 python3 $ref references $fixtures $ids 16 "$work" $cases > "$work/references.log" 2>&1 \
    || { echo "transformers references failed"; tail -20 "$work/references.log"; status=1; }
  for c in $cases; do
    f=${c%%:*}; dt=${c##*:}; d=$fixtures/$f; tag=$f-$dt
    timeout 300 "${phx[@]}" djl-run "$d" --device 0 --dtype "$dt" --ids $ids --generate 16 --repeat 1 --json --json-last-logits \
      > "$work/ours-$tag.json" 2> "$work/ours-$tag.log" \
      || { echo "$tag: djl-run failed"; tail -20 "$work/ours-$tag.log"; status=1; continue; }
    python3 $ref compare "$work/ref-$tag.json" "$work/ours-$tag.json" | tee -a "$out/correctness.jsonl" || status=1
  done
fi

if [[ " $modes " == *" bench8b "* || " $modes " == *" routes "* ]]; then
  m=/tmp/llama8b; f16=/tmp/llama8b-f16
  step "bench8b: writing a Llama-3.1-8B-shaped bf16 checkpoint (4 shards)"
  [ -f $m/config.json ] || timeout 600 "${phx[@]}" gen-model $m --size 16g --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 \
      --vocab 128256 --context 8192 --shards 4 --tokenizer $fixtures/tiny-chat-llama 2>&1 | tail -3
  du -sh $m; ls $m
  cat $m/*.safetensors > /dev/null # page cache warm
  ids=1,2,3,4,5,6,7,8
  if [[ " $modes " == *" bench8b "* ]]; then
  step "bench8b: Phoenix (djl-run --device 0, bf16), twice"
  for r in 1 2; do
    timeout 600 "${phx[@]}" djl-run $m --device 0 --ids $ids --generate 64 --repeat 3 --json --json-last-logits > "$work/8b-phoenix-$r.json" 2> "$work/8b-phoenix-$r.log" \
      || { echo "phoenix run $r failed"; tail -20 "$work/8b-phoenix-$r.log"; status=1; }
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in ('load_seconds','first_token_seconds','tokens_per_s','tokens_per_s_min','tokens_per_s_max','device','dtype')}, 'generated', d['generated'][:8])" "$work/8b-phoenix-$r.json" || true
  done
  step "bench8b: transformers from_pretrained(device_map=cuda) and generate, twice"
  for r in 1 2; do
    timeout 600 python3 $ref bench $m $ids 64 "$work/8b-transformers-$r.json" 2> "$work/8b-transformers-$r.log" || { tail -5 "$work/8b-transformers-$r.log"; status=1; }
  done
  fi
  step "bench8b: DJL's own route (NDList.decode into host, then toDevice) against Phoenix on the same float16 files"
  [ -d $f16 ] || timeout 600 python3 $ref to_f16 $m $f16 2000000000
  [ -f $f16/model.safetensors.index.json ] || python3 $ref index $f16
  ls $f16 | head -20; cat $f16/*.safetensors > /dev/null
  for r in 1 2; do
    for p in decode-gpu phoenix-gpu; do
      timeout 600 "${phx[@]}" djl-load-bench $f16 --child $p 2> "$work/8b-$p-$r.log" | sed "s/^/round $r $p, f16 files: /" | tee -a "$out/8b-routes.txt" || { tail -5 "$work/8b-$p-$r.log"; status=1; }
    done
  done
  timeout 600 "${phx[@]}" djl-load-bench $m --child phoenix-gpu 2>> "$work/8b-phoenix-gpu-bf16.log" | sed 's/^/bf16 files: /' | tee -a "$out/8b-routes.txt"
fi
if [[ " $modes " == *" serve8k "* ]]; then
  m=/tmp/llama8b
  step "serve8k: phoenix serve --device 0 over the 8B-shaped checkpoint, an 8,000-token shared prefix"
  [ -f $m/config.json ] || timeout 600 "${phx[@]}" gen-model $m --size 16g --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 \
      --vocab 128256 --context 8192 --shards 4 --tokenizer $fixtures/tiny-chat-llama 2>&1 | tail -1
  cat $m/*.safetensors > /dev/null
  PHX_SERVE_TRACE=1 timeout 500 "${phx[@]}" serve-bench $m --device 0 --requests ${SERVE_REQUESTS:-4} --concurrency ${SERVE_CONC:-1} --prefix-tokens 8000 --suffix-tokens 32 \
      --max-tokens 16 --tiers ${SERVE_TIERS:-off,memory,disk} > "$out/serve8k.txt" 2> "$work/serve8k.log" \
    || { echo "serve-bench failed"; tail -30 "$work/serve8k.log"; status=1; }
  cat "$out/serve8k.txt"
  grep "trace" "$work/serve8k.log" | tail -16
  # a real fixture in its own dtype: each tier's greedy text against the tier off's, on the GPU
  step "serve8k: serve-bench --device 0 on tiny-chat-llama (float32), each tier's text against the tier off"
  timeout 240 "${phx[@]}" serve-bench $fixtures/tiny-chat-llama --device 0 --requests 4 --concurrency 1,4 --prefix-tokens 1200 \
      --suffix-tokens 16 --max-tokens 24 --tiers off,memory,disk > "$out/serve-fixture.txt" 2> "$work/serve-fixture.log" \
    || { echo "serve-bench (fixture) failed"; tail -30 "$work/serve-fixture.log"; status=1; }
  cat "$out/serve-fixture.txt"
fi
echo; echo "djl_gpu.sh: status $status"
exit $status
