"""Reference logits for testdata/fixtures/tiny-llama, computed once with transformers on the GPU
machine (torch 2.11, transformers as installed there) and committed beside the model.

The model's weights are bf16; the forward pass runs in float32 (weights upcast exactly, since
bf16 -> f32 is lossless) on the CPU and in float32 on the GPU, so a Java implementation that
upcasts the same weights can be compared at a tight tolerance. Writes expected_logits.json in the
same shape as tiny-gpt2's: {"input_ids": [[...]], "logits": [[vocab floats] per position]},
plus greedy continuations with and without the KV cache.

Usage: python3 llama_reference.py MODEL_DIR OUT_JSON
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM

model_dir, out = sys.argv[1], sys.argv[2]
ids = [1, 7, 42, 300, 5, 99, 511, 0]
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
result = {"input_ids": [ids], "dtype": "float32 forward over bf16 weights upcast",
          "torch": torch.__version__}
with torch.no_grad():
    x = torch.tensor([ids])
    cpu = model(x).logits[0]
    result["logits"] = cpu.tolist()
    if torch.cuda.is_available():
        gpu = model.to("cuda")(x.to("cuda")).logits[0].cpu()
        result["max_abs_diff_cpu_vs_cuda"] = float((gpu - cpu).abs().max())
        model = model.to("cpu")
    gen = model.generate(x, max_new_tokens=8, do_sample=False, use_cache=True)
    result["generate_8_greedy"] = gen[0, len(ids):].tolist()
    gen2 = model.generate(x, max_new_tokens=8, do_sample=False, use_cache=False)
    result["generate_8_greedy_no_cache"] = gen2[0, len(ids):].tolist()
import transformers
result["transformers"] = transformers.__version__
json.dump(result, open(out, "w"))
print("logits", cpu.shape, "generated", result["generate_8_greedy"], result["generate_8_greedy_no_cache"],
      "cpu/cuda diff", result.get("max_abs_diff_cpu_vs_cuda"))
