#!/usr/bin/env python3
"""Trains tokenizers of real models' sizes on the GPU machine (which has the tokenizers library and
no network), for measuring guided decoding's per-step cost on vocabularies as large as real ones:

  bpe-128k/tokenizer.json   byte-level BPE, 128,000 tokens (Llama 3's and Qwen's kind and size)
  sp-32k/tokenizer.json     BPE with byte fallback and a Metaspace pre-tokenizer, 32,000 tokens
                            (Llama 2's, Mistral v0.1's, Gemma's kind)

Corpus: the Python standard library's and site-packages' sources and docs on that machine (text
in many styles: code, prose, JSON, non-ASCII). Usage: python3 train_tokenizers.py OUT_DIR
"""
import glob
import os
import sys
import sysconfig

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


def corpus(limit_bytes=150_000_000):
    roots = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    seen = 0
    for root in roots:
        for pattern in ("**/*.py", "**/*.md", "**/*.txt", "**/*.json", "**/*.rst"):
            for f in glob.iglob(os.path.join(root, pattern), recursive=True):
                try:
                    with open(f, encoding="utf-8") as h:
                        text = h.read()
                except (OSError, UnicodeDecodeError):
                    continue
                seen += len(text)
                yield text
                if seen > limit_bytes:
                    return


def main():
    out = sys.argv[1]
    special = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=128000, special_tokens=special,
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                          show_progress=False))
    os.makedirs(os.path.join(out, "bpe-128k"), exist_ok=True)
    bpe.save(os.path.join(out, "bpe-128k", "tokenizer.json"))
    print("bpe-128k", bpe.get_vocab_size(), flush=True)

    sp = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    sp.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    sp.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    byte_tokens = ["<0x%02X>" % b for b in range(256)]
    sp.train_from_iterator(corpus(60_000_000), trainers.BpeTrainer(vocab_size=32000,
                                                                   special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens,
                                                                   show_progress=False))
    os.makedirs(os.path.join(out, "sp-32k"), exist_ok=True)
    sp.save(os.path.join(out, "sp-32k", "tokenizer.json"))
    print("sp-32k", sp.get_vocab_size(), flush=True)


if __name__ == "__main__":
    main()
