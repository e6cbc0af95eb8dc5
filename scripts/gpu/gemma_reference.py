#!/usr/bin/env python3
"""Tiny Gemma checkpoints written by transformers, with the logits transformers computes for them,
and transformers' reading of published Gemma configs: the fixtures of the DJL GemmaBlock and of
real sliding-window attention.

Each is 64 wide, vocab 512, bf16 on disk, every parameter random (fixed seed) and perturbed after
transformers' own init (Gemma's norms scale by 1 + weight, so their weights get small noise):

  tiny-gemma    Gemma 1: GeGLU (gelu_pytorch_tanh), embeddings scaled by sqrt(hidden), norms by
                1 + weight, one key/value head (as gemma-2b), head_dim 16, tied embeddings
  tiny-gemma2   Gemma 2: layers alternating sliding (window 8, shorter than the 16-token input)
                and full attention, query_pre_attn_scalar 32 (not head_dim), attention and final
                logit softcapping small enough to bend the scores, the four norms of a layer
  tiny-gemma3   Gemma 3 text: per-head q/k norms, head_dim 32 (not hidden / heads), layer types
                [sliding, sliding, full, sliding] with window 8, a rope per layer type (sliding:
                default, theta 1e4; full: linear factor 4, theta 1e6)

transformers computes them with attn_implementation="eager": the softcapping is part of the
models' definition, and eager is the implementation Google's and transformers' docs prescribe for
it. expected_logits.json as the Llama family's (logits per position of `input_ids`, 8 greedy tokens
with and without the KV cache); expected_long.json (tiny-gemma3, tiny-gemma2 and the existing
tiny-mistral, window 32): the last logits of a long random sequence, far past the windows.

gemma_configs.json: published Gemma configs (transformers 4's layout, as the Hub has them) read by
AutoConfig, with the layer types, rope parameters and the defaults transformers 5 fills in.

Usage: python3 gemma_reference.py OUT_ROOT [SOURCES_DIR]
  SOURCES_DIR: where to copy transformers' own Gemma sources (what the fixtures were computed by)
"""
import json
import os
import shutil
import sys
import tempfile

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

IDS = [1, 7, 42, 300, 5, 99, 511, 0, 3, 17, 250, 64, 128, 9, 77, 401]
COMMON = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, vocab_size=512, rms_norm_eps=1e-6,
              bos_token_id=2, eos_token_id=1, pad_token_id=0, max_position_embeddings=1024)


def families():
    from transformers import Gemma2Config, Gemma3TextConfig, GemmaConfig
    return {
        "tiny-gemma": GemmaConfig(**COMMON, num_hidden_layers=2, num_key_value_heads=1, head_dim=16,
                                  hidden_activation="gelu_pytorch_tanh"),
        "tiny-gemma2": Gemma2Config(**COMMON, num_hidden_layers=3, num_key_value_heads=2, head_dim=16,
                                    query_pre_attn_scalar=32, sliding_window=8, attn_logit_softcapping=1.0,
                                    final_logit_softcapping=2.0, hidden_activation="gelu_pytorch_tanh"),
        "tiny-gemma3": Gemma3TextConfig(**COMMON, num_hidden_layers=4, num_key_value_heads=2, head_dim=32,
                                        query_pre_attn_scalar=24, sliding_window=8,
                                        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                                                     "sliding_attention"],
                                        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0,
                                                                            "rope_theta": 1000000.0},
                                                         "sliding_attention": {"rope_type": "default",
                                                                               "rope_theta": 10000.0}},
                                        hidden_activation="gelu_pytorch_tanh"),
    }


def perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            # Gemma's norms multiply by 1 + weight: small noise around 0 is a scale near 1
            p.copy_(0.2 * noise if name.endswith("norm.weight") else 0.1 * noise)


def load(d):
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()


def write(name, config, root, seed):
    d = os.path.join(root, name)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    perturb(model, seed)
    model.to(torch.bfloat16).save_pretrained(d)
    model = load(d)
    result = {"input_ids": [IDS], "dtype": "float32 forward over bf16 weights upcast, attn_implementation eager",
              "torch": torch.__version__, "transformers": transformers.__version__,
              "layer_types": getattr(model.config, "layer_types", None)}
    rotary = {}
    for bname, buf in model.model.named_buffers():
        if "inv_freq" in bname:
            rotary[bname] = buf.tolist()
    result["rotary_buffers"] = rotary
    with torch.no_grad():
        x = torch.tensor([IDS])
        result["logits"] = model(x).logits[0].tolist()
        if torch.cuda.is_available():
            gpu = model.to("cuda")(x.to("cuda")).logits[0].cpu()
            result["max_abs_diff_cpu_vs_cuda"] = float((gpu - torch.tensor(result["logits"])).abs().max())
            model = model.to("cpu")
        kw = dict(attention_mask=torch.ones_like(x), max_new_tokens=8, min_new_tokens=8, do_sample=False,
                  eos_token_id=None, pad_token_id=0)
        result["generate_8_greedy"] = model.generate(x, use_cache=True, **kw)[0, len(IDS):].tolist()
        result["generate_8_greedy_no_cache"] = model.generate(x, use_cache=False, **kw)[0, len(IDS):].tolist()
        if result["generate_8_greedy"][0] != int(torch.tensor(result["logits"][-1]).argmax()):
            raise AssertionError("generate's first token is not the argmax of the forward's last logits")
    with open(os.path.join(d, "expected_logits.json"), "w") as f:
        json.dump(result, f)
    print(name, "layer_types", result["layer_types"], "greedy", result["generate_8_greedy"],
          result["generate_8_greedy_no_cache"], "cpu/cuda", result.get("max_abs_diff_cpu_vs_cuda"), flush=True)


def long_logits(root, name, length, seed, eager=True):
    """Last-position logits of a LENGTH-token random sequence, and of its prefix of LENGTH - 1: a
    sliding window's far past, and the last decode step that a cache must take the same way."""
    d = os.path.join(root, name)
    model = (load(d) if eager else AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32)).eval()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, length), generator=g)
    with torch.no_grad():
        last = model(ids, attention_mask=torch.ones_like(ids)).logits[0, -1]
    with open(os.path.join(d, "expected_long.json"), "w") as f:
        json.dump({"input_ids": ids[0].tolist(), "last_logits": last.tolist()}, f)
    print(name, "long", length, "argmax", int(last.argmax()), flush=True)


# Published configs as the Hub has them (transformers 4's layout); what transformers 5 reads them as
# is recorded, so that the block's own reading of each is tested against it.
CONFIGS = {
    "gemma-2b": {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 2048,
                 "intermediate_size": 16384, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
                 "num_hidden_layers": 18, "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh",
                 "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "vocab_size": 256000},
    "gemma-2-2b-it": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
                      "intermediate_size": 9216, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                      "num_hidden_layers": 26, "hidden_act": "gelu_pytorch_tanh",
                      "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
                      "query_pre_attn_scalar": 256, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
                      "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                      "vocab_size": 256000, "cache_implementation": "hybrid"},
    "gemma-2-27b": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 4608,
                    "intermediate_size": 36864, "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
                    "num_hidden_layers": 46, "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
                    "query_pre_attn_scalar": 144, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
                    "final_logit_softcapping": 30.0, "vocab_size": 256000},
    "gemma-3-1b-it": {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
                      "intermediate_size": 6912, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                      "num_hidden_layers": 26, "hidden_activation": "gelu_pytorch_tanh",
                      "max_position_embeddings": 32768, "query_pre_attn_scalar": 256, "sliding_window": 512,
                      "sliding_window_pattern": 6, "rope_theta": 1000000, "rope_local_base_freq": 10000,
                      "rope_scaling": None, "attn_logit_softcapping": None, "final_logit_softcapping": None,
                      "rms_norm_eps": 1e-6, "vocab_size": 262144},
    "gemma-3-4b-text-scaled": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                               "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                               "sliding_window": 1024},
    "gemma-3-text-defaults": {"model_type": "gemma3_text"},
}


def configs(root):
    out = {}
    for name, fields in CONFIGS.items():
        with tempfile.TemporaryDirectory() as t:
            with open(os.path.join(t, "config.json"), "w") as f:
                json.dump(fields, f)
            c = AutoConfig.from_pretrained(t)
        read = {k: getattr(c, k, None) for k in (
            "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size", "max_position_embeddings", "rms_norm_eps", "query_pre_attn_scalar",
            "sliding_window", "attn_logit_softcapping", "final_logit_softcapping", "hidden_activation",
            "layer_types", "rope_parameters", "tie_word_embeddings", "attention_bias")}
        out[name] = {"config": fields, "read": read}
        # what the rotary embedding makes of it, per layer type where the model has types
        model_cls = {"gemma": "gemma.modeling_gemma.GemmaRotaryEmbedding",
                     "gemma2": "gemma2.modeling_gemma2.Gemma2RotaryEmbedding",
                     "gemma3_text": "gemma3.modeling_gemma3.Gemma3RotaryEmbedding"}[fields["model_type"]]
        import importlib
        module, cls = model_cls.rsplit(".", 1)
        rot = getattr(importlib.import_module("transformers.models." + module), cls)(config=c)
        out[name]["rotary_buffers"] = {n: b.tolist() for n, b in rot.named_buffers() if "inv_freq" in n}
        out[name]["attention_scaling"] = {n: float(v) for n, v in vars(rot).items()
                                          if "attention_scaling" in n and isinstance(v, (int, float))}
        print("config", name, read["layer_types"][:7] if read["layer_types"] else None, read["rope_parameters"],
              sorted(out[name]["rotary_buffers"]), flush=True)
    with open(os.path.join(root, "gemma_configs.json"), "w") as f:
        json.dump(out, f, indent=1, default=str)


def sources(dest):
    os.makedirs(dest, exist_ok=True)
    base = os.path.dirname(transformers.__file__)
    for rel in ["models/gemma/modeling_gemma.py", "models/gemma/configuration_gemma.py",
                "models/gemma2/modeling_gemma2.py", "models/gemma2/configuration_gemma2.py",
                "models/gemma3/modeling_gemma3.py", "models/gemma3/configuration_gemma3.py", "masking_utils.py",
                "modeling_rope_utils.py", "integrations/sdpa_attention.py", "models/mistral/modeling_mistral.py",
                "models/qwen2/configuration_qwen2.py", "models/qwen3/configuration_qwen3.py",
                "models/phi3/modeling_phi3.py", "models/mistral/configuration_mistral.py",
                "models/phi3/configuration_phi3.py", "activations.py", "cache_utils.py"]:
        p = os.path.join(base, rel)
        if os.path.exists(p):
            shutil.copy(p, os.path.join(dest, rel.replace("/", "__")))


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    if len(sys.argv) > 2:
        sources(sys.argv[2])
    failed = 0
    for i, (name, config) in enumerate(families().items()):
        try:
            write(name, config, root, 2000 + i)
        except Exception as e:  # the others are still worth having
            print(name, "FAILED", type(e).__name__, e, flush=True)
            failed += 1
    for step in (lambda: configs(root),
                 lambda: long_logits(root, "tiny-gemma2", 100, 11),
                 lambda: long_logits(root, "tiny-gemma3", 100, 12),
                 lambda: long_logits(root, "tiny-mistral", 300, 13, eager=False)):
        try:
            step()
        except Exception as e:
            print("FAILED", type(e).__name__, e, flush=True)
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
