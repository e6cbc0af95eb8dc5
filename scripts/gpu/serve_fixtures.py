"""Checkpoints with their own tokenizers and chat templates, and what transformers does with them,
for the serve tests (testdata/fixtures/tiny-chat-*). Run once on the GPU machine, which has torch,
tokenizers and transformers and no network; the results are committed.

Two small float32 models with random weights (fixed seeds), each with a tokenizer trained here
on the Python standard library's sources plus some non-ASCII text:
- tiny-chat-llama: Llama, a byte-level BPE tokenizer (Llama 3's kind) whose post-processor adds
  BOS, a chat template in chat_template.jinja (the transformers 5 layout) in Llama 3's style,
  generation_config.json with two EOS ids;
- tiny-chat-gpt2: GPT-2, a BPE tokenizer with byte fallback and a metaspace normaliser
  (Llama 2 / Mistral's kind), a chat template in tokenizer_config.json's chat_template (the older
  layout) that uses namespace(), loop.first, str.strip(), str.startswith() and raise_exception.

reference.json in each directory: tokenizer cases (encode with and without special tokens,
decode with and without skipping them), chat renders (apply_chat_template with
add_generation_prompt=True: text and ids, or the exception's message), and greedy generations
(model.generate, do_sample=False) for completion prompts and chats, short and several 256-token
chunks long.

Usage: python3 serve_fixtures.py OUT_DIR   (writes OUT_DIR/tiny-chat-llama, OUT_DIR/tiny-chat-gpt2)
"""
import glob
import json
import os
import random
import sys
import sysconfig

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

out_root = sys.argv[1]
os.makedirs(out_root, exist_ok=True)

UNICODE = [
    "Café au lait, naïve façade, Ærøskøbing, São Paulo, Dvořák, İstanbul.",
    "你好，世界。今天天气很好，我们去公园散步吧。",
    "こんにちは世界、東京は晴れです。",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Emoji: 🙂 👍🏽 👨‍👩‍👧 🇯🇵 — and a combining é (e + U+0301).",
    "Tabs\tand  double  spaces,\nnew lines\n\nand trailing spaces   ",
]


def corpus():
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:120]
    lines = []
    for f in files:
        with open(f, encoding="utf-8", errors="ignore") as fh:
            lines.extend(fh.read().splitlines())
    lines.extend(UNICODE * 3)
    return lines


LINES = corpus()
random.seed(7)
LONG_TEXT = " ".join(l.strip() for l in LINES[2000:2600] if l.strip())[:3000]

LLAMA_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

LLAMA_TEMPLATE = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "You are a helpful assistant." %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" + system_message + "<|eot_id|>" }}
{%- for message in messages %}
    {%- if message['role'] not in ['user', 'assistant'] %}
        {{- raise_exception("Unsupported role: " + message['role']) }}
    {%- endif %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

GPT2_TEMPLATE = """{%- set ns = namespace(turns=0) -%}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- if not loop.first %}{{ raise_exception('The system message must come first') }}{% endif %}
<|system|>
{{ message.content.strip() }}{{ eos_token }}
{%- else %}
{%- if (message.role == 'user') != (ns.turns % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}
{%- if message.content.startswith('!') %}{{ raise_exception('Commands are not supported: ' + message.content) }}{% endif %}
{%- set ns.turns = ns.turns + 1 %}
<|{{ message.role }}|>
{{ message.content.strip() }}{% if message.role == 'assistant' %}{{ eos_token }}{% endif %}
{%- endif %}
{%- if loop.last and add_generation_prompt %}
<|assistant|>
{% endif %}
{%- endfor %}
"""


def byte_level_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=LLAMA_SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(LINES, trainer)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                       pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                                       special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def byte_fallback_tokenizer():
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=150,
                                  show_progress=False)
    tok.train_from_iterator(LINES, trainer)
    # the 256 byte tokens are ordinary vocabulary entries, as in Llama 2's tokenizer.json
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    for b in range(256):
        name = "<0x%02X>" % b
        if name not in vocab:
            vocab[name] = len(vocab)
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def write_tokenizer(d, tok, config):
    tok.save(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)


CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "  Be brief.  "}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."},
     {"role": "user", "content": "Another one, please."}],
    [{"role": "user", "content": UNICODE[0] + " " + UNICODE[1] + " " + UNICODE[4]}],
    [{"role": "system", "content": LONG_TEXT}, {"role": "user", "content": "Summarize the above."}],
    [{"role": "user", "content": "Tell me about <|eot_id|> and </s> tokens."}],
]
BAD_CHATS = [
    [{"role": "tool", "content": "42"}],
    [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}],
    [{"role": "user", "content": "!shutdown"}],
]
TEXTS = ["Hello, world!", "def main():\n    return 0\n", "  leading and trailing  ", ""] + UNICODE + [
    "literal <|eot_id|> and </s> and <s> in text", LONG_TEXT[:1500]]
COMPLETIONS = ["The quick brown fox", "import os\nimport sys\n\ndef", UNICODE[1], LONG_TEXT]


def references(d, max_new=16):
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    ref = {"transformers": transformers.__version__, "torch": torch.__version__, "tokenizer_class": type(tok).__name__,
           "bos_token": tok.bos_token, "eos_token": tok.eos_token,
           "generation_eos_token_id": model.generation_config.eos_token_id, "max_new_tokens": max_new,
           "texts": [], "chats": [], "completions": []}
    for t in TEXTS:
        with_sp = tok(t, add_special_tokens=True)["input_ids"]
        without = tok(t, add_special_tokens=False)["input_ids"]
        ref["texts"].append({"text": t, "ids": with_sp, "ids_no_special": without,
                             "decode": tok.decode(with_sp, skip_special_tokens=False),
                             "decode_skip_special": tok.decode(with_sp, skip_special_tokens=True)})

    def generate(ids):
        with torch.no_grad():
            x = torch.tensor([ids])
            g = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=max_new, do_sample=False,
                               use_cache=True)
        new = g[0, len(ids):].tolist()
        return {"generated": new, "generated_text": tok.decode(new, skip_special_tokens=True),
                "generated_text_with_special": tok.decode(new, skip_special_tokens=False)}

    for chat in CHATS + BAD_CHATS:
        entry = {"messages": chat}
        try:
            text = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        except Exception as e:  # raise_exception in the template
            entry["error"] = str(e)
            entry["error_type"] = type(e).__name__
            ref["chats"].append(entry)
            continue
        ids = tok(text, add_special_tokens=False)["input_ids"]
        entry.update({"text": text, "ids": ids})
        entry.update(generate(ids))
        ref["chats"].append(entry)
    for p in COMPLETIONS:
        ids = tok(p, add_special_tokens=True)["input_ids"]
        entry = {"prompt": p, "ids": ids}
        entry.update(generate(ids))
        ref["completions"].append(entry)
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
    lens = [len(c.get("ids", [])) for c in ref["chats"]] + [len(c["ids"]) for c in ref["completions"]]
    print(d, type(tok).__name__, "vocab", len(tok), "prompt lengths", lens,
          "eos hits", sum(1 for c in ref["chats"] + ref["completions"] if len(c.get("generated", [0] * max_new)) < max_new))


# --- tiny-chat-llama
d = os.path.join(out_root, "tiny-chat-llama")
os.makedirs(d, exist_ok=True)
tok = byte_level_tokenizer()
write_tokenizer(d, tok, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
                         "eos_token": "<|eot_id|>", "model_max_length": 2048, "clean_up_tokenization_spaces": False})
with open(os.path.join(d, "chat_template.jinja"), "w") as f:
    f.write(LLAMA_TEMPLATE)
torch.manual_seed(11)
eot, eos = tok.token_to_id("<|eot_id|>"), tok.token_to_id("<|end_of_text|>")
cfg = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048, rms_norm_eps=1e-5,
                  initializer_range=0.05, tie_word_embeddings=False, bos_token_id=tok.token_to_id("<|begin_of_text|>"),
                  eos_token_id=[eot, eos])
m = LlamaForCausalLM(cfg).to(torch.float32).eval()
m.generation_config.eos_token_id = [eot, eos]
m.generation_config.bos_token_id = cfg.bos_token_id
m.save_pretrained(d)
references(d)

# --- tiny-chat-gpt2
d = os.path.join(out_root, "tiny-chat-gpt2")
os.makedirs(d, exist_ok=True)
tok = byte_fallback_tokenizer()
write_tokenizer(d, tok, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                         "unk_token": "<unk>", "model_max_length": 2048, "clean_up_tokenization_spaces": False,
                         "chat_template": GPT2_TEMPLATE})
torch.manual_seed(12)
cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=64, n_layer=2, n_head=4, n_positions=2048,
                 initializer_range=0.05, bos_token_id=tok.token_to_id("<s>"), eos_token_id=tok.token_to_id("</s>"))
m = GPT2LMHeadModel(cfg).to(torch.float32).eval()
m.save_pretrained(d)
references(d)
