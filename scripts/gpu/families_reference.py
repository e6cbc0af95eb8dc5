#!/usr/bin/env python3
"""Tiny checkpoints of the Llama family's relatives, written by transformers, with the logits
transformers computes for them: the fixtures of the DJL blocks' architecture variants.

Each is 2 layers, 64 wide, vocab 512, bf16 on disk, every parameter random (fixed seed) and
perturbed after transformers' own init, so that biases and norm weights, which transformers
initialises to 0 and 1, are not neutral and a block that skipped them would be seen:

  tiny-llama3        rope_type llama3 (Llama 3.1/3.2), original context 64 so that the head
                     dimension's 8 frequencies fall in all three of its bands; tied embeddings
  tiny-llama-bias    attention_bias and mlp_bias true (Llama-derived checkpoints that use them)
  tiny-llama-linear  rope_type linear, factor 4
  tiny-qwen2         Qwen2/Qwen2.5: q/k/v biases, rope_theta 1e6, tied embeddings, no sliding window
  tiny-qwen3         Qwen3: per-head RMSNorm of queries and keys, head_dim 32 (not hidden/heads)
  tiny-mistral       Mistral: sliding_window 32 (a context of at most 32 is exactly full attention)
  tiny-phi3          Phi-3/Phi-4 (model_type phi3): fused qkv_proj and gate_up_proj
  tiny-phi3-longrope Phi-3.5/Phi-4-mini's settings: rope_type longrope (short and long factors,
                     original context 64 of 256) and partial_rotary_factor 0.75
  tiny-qwen2-yarn    Qwen2 with rope_type yarn (Qwen2.5's long-context setting): factor 4 against an
                     original context of 256 while max_position_embeddings is 2048, so a block that
                     took the factor from the other of the two would be seen; attention factor default

expected_logits.json (as tiny-llama's): transformers' float32 forward over the bf16 weights upcast
(lossless), logits of `input_ids` per position, and 8 greedy tokens with and without the KV cache;
plus the rotary embedding's `inv_freq` and `attention_scaling` as transformers computed them.

Usage: python3 families_reference.py OUT_ROOT [NAME...]
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

IDS = [1, 7, 42, 300, 5, 99, 511, 0, 3, 17, 250, 64, 128, 9, 77, 401]
COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2)


def families():
    from transformers import LlamaConfig, MistralConfig, Phi3Config, Qwen2Config, Qwen3Config
    return {
        "tiny-llama3": LlamaConfig(**COMMON, head_dim=16, max_position_embeddings=2048, tie_word_embeddings=True,
                                   rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 64}),
        "tiny-llama-bias": LlamaConfig(**COMMON, head_dim=16, max_position_embeddings=1024, attention_bias=True,
                                       mlp_bias=True),
        "tiny-llama-linear": LlamaConfig(**COMMON, head_dim=16, max_position_embeddings=4096,
                                         rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}),
        "tiny-qwen2": Qwen2Config(**COMMON, max_position_embeddings=1024, tie_word_embeddings=True,
                                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                  use_sliding_window=False, sliding_window=4096, max_window_layers=2),
        "tiny-qwen3": Qwen3Config(**COMMON, head_dim=32, max_position_embeddings=1024, tie_word_embeddings=True,
                                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                  use_sliding_window=False),
        "tiny-mistral": MistralConfig(**COMMON, head_dim=16, max_position_embeddings=1024, sliding_window=32,
                                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        "tiny-qwen2-yarn": Qwen2Config(**COMMON, max_position_embeddings=2048, tie_word_embeddings=True,
                                       rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                                        "original_max_position_embeddings": 256},
                                       use_sliding_window=False),
        "tiny-phi3": Phi3Config(**COMMON, max_position_embeddings=1024, sliding_window=None, pad_token_id=0,
                                rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        "tiny-phi3-longrope": Phi3Config(**COMMON, max_position_embeddings=256, original_max_position_embeddings=64,
                                         sliding_window=None, pad_token_id=0, partial_rotary_factor=0.75,
                                         rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                          "short_factor": [1.0, 1.1, 1.3, 1.7, 2.3, 3.1],
                                                          "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0]}),
    }


def perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith("bias"):
                p.copy_(0.2 * noise)
            else:
                p.copy_(0.1 * noise)


def write(name, config, root, seed):
    d = os.path.join(root, name)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    perturb(model, seed)
    model.to(torch.bfloat16).save_pretrained(d)
    # the reference reads back what was written: bf16 upcast to float32, exactly
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    result = {"input_ids": [IDS], "dtype": "float32 forward over bf16 weights upcast", "torch": torch.__version__,
              "transformers": transformers.__version__}
    rotary = model.model.rotary_emb  # what the rope type made of the config: the frequencies and cos/sin's scale
    result["inv_freq"] = rotary.inv_freq.tolist()
    result["attention_scaling"] = float(rotary.attention_scaling)
    with torch.no_grad():
        x = torch.tensor([IDS])
        result["logits"] = model(x).logits[0].tolist()
        if torch.cuda.is_available():
            gpu = model.to("cuda")(x.to("cuda")).logits[0].cpu()
            result["max_abs_diff_cpu_vs_cuda"] = float((gpu - torch.tensor(result["logits"])).abs().max())
            model = model.to("cpu")
        # the mask is given: generate would otherwise take the id equal to pad_token_id for padding
        kw = dict(attention_mask=torch.ones_like(x), max_new_tokens=8, min_new_tokens=8, do_sample=False,
                  eos_token_id=None, pad_token_id=0)
        result["generate_8_greedy"] = model.generate(x, use_cache=True, **kw)[0, len(IDS):].tolist()
        result["generate_8_greedy_no_cache"] = model.generate(x, use_cache=False, **kw)[0, len(IDS):].tolist()
        if result["generate_8_greedy"][0] != int(torch.tensor(result["logits"][-1]).argmax()):
            raise AssertionError("generate's first token is not the argmax of the forward's last logits")
    with open(os.path.join(d, "expected_logits.json"), "w") as f:
        json.dump(result, f)
    print(name, "logits", len(result["logits"]), "x", len(result["logits"][0]), "greedy", result["generate_8_greedy"],
          result["generate_8_greedy_no_cache"], "cpu/cuda", result.get("max_abs_diff_cpu_vs_cuda"), flush=True)


# Real checkpoints' rope settings (config.json as the Hub has them, transformers 4's layout unless
# noted), with made-up variants for the paths no published config takes: what transformers 5's rotary
# embedding makes of each is recorded in rope_cases.json (the block's RotaryFrequencies is tested on
# them without weights).
ROPE_CASES = {
    "llama-2-7b": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
                   "rope_theta": 10000.0, "rope_scaling": None},
    "codellama-7b": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 16384,
                     "rope_theta": 1000000.0, "rope_scaling": None},
    "llama-3.1-8b": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                     "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                               "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "llama-3.2-1b": {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
                     "max_position_embeddings": 131072, "rope_theta": 500000.0,
                     "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "llama-2-linear-type-key": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                                "max_position_embeddings": 16384, "rope_theta": 10000.0,
                                "rope_scaling": {"type": "linear", "factor": 4.0}},
    "llama-2-dynamic": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
                        "rope_theta": 10000.0, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
    "mistral-7b-v0.1": {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                        "max_position_embeddings": 32768, "rope_theta": 10000.0, "sliding_window": 4096},
    "mistral-nemo": {"model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "head_dim": 128, "max_position_embeddings": 1024000, "rope_theta": 1000000.0, "sliding_window": None},
    "qwen2.5-7b": {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                   "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rope_scaling": None,
                   "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 28},
    "qwen2.5-7b-yarn": {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
                        "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 28},
    "qwen3-8b-yarn": {"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                      "head_dim": 128, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
                      "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}},
    "yarn-no-truncate": {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 65536,
                         "rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "truncate": False,
                                                                  "original_max_position_embeddings": 8192,
                                                                  "beta_fast": 16, "beta_slow": 2}},
    "yarn-mscale": {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 65536,
                    "rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 16.0, "mscale": 0.707,
                                                             "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}},
    "yarn-mscale-differ": {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 65536,
                           "rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 16.0, "mscale": 1.0,
                                                                    "mscale_all_dim": 0.5, "original_max_position_embeddings": 4096}},
    "yarn-attention-factor": {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128,
                              "max_position_embeddings": 65536, "rope_theta": 1000000.0,
                              "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "attention_factor": 1.5,
                                               "original_max_position_embeddings": 32768}},
    "yarn-no-original": {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 8192,
                         "rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
    "phi-3.5-mini-like-longrope": {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
                                   "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
                                   "rope_theta": 10000.0, "sliding_window": 262144,
                                   "rope_scaling": {"type": "longrope",
                                                    "short_factor": [1.0 + 0.05 * i for i in range(48)],
                                                    "long_factor": [1.0 + 0.9 * i for i in range(48)]}},
    "phi-4-mini-like-partial": {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 24,
                                "num_key_value_heads": 8, "max_position_embeddings": 131072,
                                "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
                                "rope_theta": 10000.0, "sliding_window": 262144,
                                "rope_scaling": {"type": "longrope",
                                                 "short_factor": [1.0 + 0.02 * i for i in range(48)],
                                                 "long_factor": [1.0 + 1.1 * i for i in range(48)]}},
    "phi-4-like": {"model_type": "phi3", "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 10,
                   "max_position_embeddings": 16384, "original_max_position_embeddings": 16384, "rope_theta": 250000.0,
                   "rope_scaling": None, "sliding_window": None},
    "transformers5-layout-llama3": {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
                                    "max_position_embeddings": 131072,
                                    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                        "original_max_position_embeddings": 8192}},
}
ROTARY = {"llama": "llama.modeling_llama.LlamaRotaryEmbedding", "mistral": "mistral.modeling_mistral.MistralRotaryEmbedding",
          "qwen2": "qwen2.modeling_qwen2.Qwen2RotaryEmbedding", "qwen3": "qwen3.modeling_qwen3.Qwen3RotaryEmbedding",
          "phi3": "phi3.modeling_phi3.Phi3RotaryEmbedding"}


def rope_cases(root):
    import importlib
    import tempfile
    from transformers import AutoConfig
    out = {}
    for name, fields in ROPE_CASES.items():
        d = dict(fields, num_hidden_layers=1, intermediate_size=64, vocab_size=32)
        with tempfile.TemporaryDirectory() as t:
            with open(os.path.join(t, "config.json"), "w") as f:
                json.dump(d, f)
            config = AutoConfig.from_pretrained(t)  # as a checkpoint's config.json is read
        module, cls = ROTARY[d["model_type"]].rsplit(".", 1)
        rotary = getattr(importlib.import_module("transformers.models." + module), cls)(config=config)
        out[name] = {"config": d, "inv_freq": rotary.inv_freq.tolist(), "attention_scaling": float(rotary.attention_scaling)}
        print("rope", name, config.rope_parameters, "scaling", out[name]["attention_scaling"], flush=True)
    with open(os.path.join(root, "rope_cases.json"), "w") as f:
        json.dump(out, f, indent=1)


def long_logits(root, name, length, seed):
    """Last-position logits of a LENGTH-token random sequence: the frequencies at positions the
    16-token input never reaches."""
    d = os.path.join(root, name)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, length), generator=g)
    with torch.no_grad():
        last = model(ids, attention_mask=torch.ones_like(ids)).logits[0, -1]
    with open(os.path.join(d, "expected_long.json"), "w") as f:
        json.dump({"input_ids": ids[0].tolist(), "last_logits": last.tolist()}, f)
    print(name, "long", length, "argmax", int(last.argmax()), flush=True)


def main():
    root = sys.argv[1]
    only = sys.argv[2:]  # names: those only (each keeps its seed)
    os.makedirs(root, exist_ok=True)
    failed = 0
    for i, (name, config) in enumerate(families().items()):
        if only and name not in only:
            continue
        try:
            write(name, config, root, 1000 + i)
        except Exception as e:  # the others are still worth having
            print(name, "FAILED", type(e).__name__, e, flush=True)
            failed += 1
    if not only:
        rope_cases(root)
        long_logits(root, "tiny-llama3", 2000, 7)
        long_logits(root, "tiny-qwen2-yarn", 2000, 8)
        long_logits(root, "tiny-qwen3", 1000, 9)
        long_logits(root, "tiny-phi3-longrope", 64, 10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
