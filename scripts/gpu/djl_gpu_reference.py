#!/usr/bin/env python3
"""transformers on the GPU, in the dtype DJL computes in, for scripts/gpu/djl_gpu.sh.

  reference DIR DTYPE IDS STEPS OUT.json   last-position logits of IDS and STEPS greedy tokens
  references ROOT IDS STEPS WORK CASE...  the same for each FIXTURE:DTYPE under ROOT, into WORK/ref-FIXTURE-DTYPE.json
  compare REF.json OURS.json                logits difference and greedy agreement (exit 1 if tokens differ)
  bench DIR IDS STEPS OUT.json              from_pretrained(device_map="cuda") to the first token; decode tokens/s
  to_f16 DIR DEST SHARD_BYTES               DIR's tensors as float16 in shards under SHARD_BYTES (for DJL's decode)
"""
import json
import sys
import time

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def load(d, dtype):
    import os
    from transformers import AutoModelForCausalLM
    with open(os.path.join(d, "config.json")) as f:
        model_type = json.load(f).get("model_type", "")
    # Gemma's softcapping is part of the model: eager is the implementation that computes it
    kw = {"attn_implementation": "eager"} if model_type.startswith("gemma") else {}
    return AutoModelForCausalLM.from_pretrained(d, dtype=dtype, device_map="cuda", **kw).eval()


def greedy(model, ids, steps):
    # EOS never ends it: the comparison is over exactly STEPS tokens
    out = model.generate(ids, max_new_tokens=steps, min_new_tokens=steps, do_sample=False, eos_token_id=None,
                         pad_token_id=0)
    return out[0, ids.shape[1]:].tolist()


def reference(d, dtype, ids, steps, out):
    model = load(d, DTYPES[dtype])
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        logits = model(x).logits[0, -1].float().cpu().tolist()
        gen = greedy(model, x, steps)
    json.dump({"dir": d, "dtype": dtype, "ids": ids, "last_logits": logits, "generated": gen,
               "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}, open(out, "w"))


def compare(ref_file, ours_file):
    ref = json.load(open(ref_file))
    ours = json.load(open(ours_file))
    a = torch.tensor(ref["last_logits"])
    b = torch.tensor(ours["logits"][-1])
    diff = (a - b).abs().max().item()
    scale = a.abs().max().item()
    same = 0
    for x, y in zip(ref["generated"], ours["generated"]):
        if x != y:
            break
        same += 1
    steps = len(ref["generated"])
    print(json.dumps({"dir": ref["dir"], "dtype": ref["dtype"], "ours_dtype": ours.get("dtype"), "device": ours.get("device"),
                      "max_abs_logit_diff": diff, "max_abs_logit": scale, "relative": diff / max(scale, 1e-9),
                      "greedy_equal_steps": same, "steps": steps,
                      "argmax_equal": int(a.argmax()) == int(b.argmax())}))
    return 0 if same == steps else 1


def bench(d, ids, steps, out):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model = load(d, torch.bfloat16)
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        first = model(x).logits[0, -1].argmax().item()
    torch.cuda.synchronize()
    first_token = time.perf_counter() - t0
    with torch.no_grad():
        greedy(model, x, 8)  # warm-up
        rates = []
        for _ in range(3):
            torch.cuda.synchronize()
            t = time.perf_counter()
            greedy(model, x, steps)
            torch.cuda.synchronize()
            rates.append(steps / (time.perf_counter() - t))
    rates.sort()
    json.dump({"first_token_seconds": first_token, "first": first, "tokens_per_s": rates[len(rates) // 2],
               "tokens_per_s_all": rates, "steps": steps}, open(out, "w"))
    print(open(out).read())


def to_f16(d, dest, shard_bytes):
    import glob
    import os
    from safetensors.torch import load_file, save_file
    os.makedirs(dest, exist_ok=True)
    shard, size, n = {}, 0, 0
    for f in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        for k, v in load_file(f).items():
            v = v.to(torch.float16)
            if size + v.numel() * 2 > shard_bytes and shard:
                save_file(shard, os.path.join(dest, "part-%03d.safetensors" % n))
                shard, size, n = {}, 0, n + 1
            shard[k] = v
            size += v.numel() * 2
    if shard:
        save_file(shard, os.path.join(dest, "part-%03d.safetensors" % n))
    index(dest)


def index(d):
    """model.safetensors.index.json for the shards in d (Phoenix loads a sharded directory by its index)."""
    import glob
    import os
    from safetensors import safe_open
    wm = {}
    for f in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        with safe_open(f, "pt") as h:
            for k in h.keys():
                wm[k] = os.path.basename(f)
    json.dump({"metadata": {}, "weight_map": wm}, open(os.path.join(d, "model.safetensors.index.json"), "w"))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "reference":
        reference(sys.argv[2], sys.argv[3], [int(i) for i in sys.argv[4].split(",")], int(sys.argv[5]), sys.argv[6])
    elif cmd == "references":
        # references ROOT IDS STEPS WORK CASE...: one process for all (torch's import is the slow part)
        root, ids, steps, work = sys.argv[2], [int(i) for i in sys.argv[3].split(",")], int(sys.argv[4]), sys.argv[5]
        for case in sys.argv[6:]:
            f, dt = case.split(":")
            reference(root + "/" + f, dt, ids, steps, "%s/ref-%s-%s.json" % (work, f, dt))
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    elif cmd == "bench":
        bench(sys.argv[2], [int(i) for i in sys.argv[3].split(",")], int(sys.argv[4]), sys.argv[5])
    elif cmd == "index":
        index(sys.argv[2])
    elif cmd == "to_f16":
        to_f16(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
