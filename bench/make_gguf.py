#!/usr/bin/env python3
"""Requantize SmolLM2-135M-Instruct Q4_1 GGUF into Q8_0 and Q4_0 GGUFs for the benchmark.

    ~/.cache/tinyrustlm/venv/bin/python bench/make_gguf.py [--src X.gguf] [--out-dir DIR] [--force]

Each tensor is dequantized (gguf.quants.dequantize) and requantized with
gguf.quants.quantize the way this benchmark needs both engines to see the same weights:

- 2-D weights whose rows are whole 32-element blocks: Q8_0, resp. Q4_0;
- token_embd.weight (tied with the LM head): Q8_0 under both (TinyRustLM's q4_0 policy
  keeps the embedding at q8_0; llama.cpp's quantizer also keeps it at higher precision);
- 1-D tensors (norms, biases): F32.

All metadata (architecture, tokenizer, chat template, ...) is copied; general.file_type
is set to MOSTLY_Q8_0 (7) resp. MOSTLY_Q4_0 (2). Idempotent: existing outputs are kept.
"""
import argparse
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFValueType as VT, GGUFWriter
from gguf.quants import dequantize, quantize

CACHE = os.path.expanduser(os.environ.get("TINYRUSTLM_CACHE", "~/.cache/tinyrustlm"))
SRC = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT = os.path.join(CACHE, "bench")
STEM = "SmolLM2-135M-Instruct"

FILE_TYPE = {Q.Q8_0: gguf.LlamaFileType.MOSTLY_Q8_0, Q.Q4_0: gguf.LlamaFileType.MOSTLY_Q4_0}


def field_value(f):
    """Python value of a reader field (scalars, strings, arrays of either)."""
    main = f.types[0]
    if main == VT.ARRAY:
        sub = f.types[-1]
        if sub == VT.STRING:
            return [bytes(f.parts[i]) for i in f.data], sub
        return [f.parts[i].tolist()[0] for i in f.data], sub
    if main == VT.STRING:
        return bytes(f.parts[f.data[0]]), None
    return f.parts[f.data[0]].tolist()[0], None


def target_type(name, shape, qtype):
    # shape is numpy order (rows, cols); the last axis is the block axis.
    if len(shape) != 2 or shape[-1] % 32 != 0:
        return Q.F32
    if name == "token_embd.weight":
        return Q.Q8_0
    return qtype


def convert(src, dst, qtype):
    r = GGUFReader(src)
    arch = field_value(r.fields["general.architecture"])[0].decode()
    tmp = dst + ".part"
    w = GGUFWriter(tmp, arch)
    skip = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count", "general.architecture",
            "general.file_type"}
    for name, f in r.fields.items():
        if name in skip:
            continue
        val, sub = field_value(f)
        w.add_key_value(name, val, f.types[0], sub_type=sub)
    w.add_file_type(int(FILE_TYPE[qtype]))

    counts = {}
    for t in r.tensors:
        # gguf shape is (ne0, ne1, ...); numpy order is reversed.
        shape = tuple(int(x) for x in reversed(t.shape.tolist()))
        data = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        tt = target_type(t.name, shape, qtype)
        if tt == Q.F32:
            out = data
            w.add_tensor(t.name, out)
        else:
            out = quantize(data, tt)
            w.add_tensor(t.name, out, raw_dtype=tt)
        counts[tt.name] = counts.get(tt.name, 0) + 1

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, dst)
    print(f"wrote {dst} ({os.path.getsize(dst)} bytes; tensors {counts})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=SRC)
    ap.add_argument("--out-dir", default=OUT)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.src):
        sys.exit(f"missing source GGUF {a.src} (scripts/fetch-models.sh downloads it)")
    os.makedirs(a.out_dir, exist_ok=True)
    for qtype in (Q.Q8_0, Q.Q4_0):
        dst = os.path.join(a.out_dir, f"{STEM}.{qtype.name}.gguf")
        if os.path.exists(dst) and not a.force:
            print(f"exists {dst}")
            continue
        convert(a.src, dst, qtype)


if __name__ == "__main__":
    main()
