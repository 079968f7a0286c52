#!/usr/bin/env python3
"""A Qwen2-shaped model of 1.54B parameters with pseudo-random Q4_K weights, as a GGUF:
the scale test of the page (e2e/synthetic.spec.mjs, opt-in) without a real 1.5B in CI.

Qwen2-1.5B's shape (28 layers, hidden 1536, 12 heads / 2 KV heads, FFN 8960, vocab
151936, tied embedding, q/k/v biases) with every matrix in Q4_K blocks of random bytes
(their f16 scales set to small finite values, so that activations stay finite), and the
real Qwen2.5 tokenizer and chat template copied from the Qwen2.5-Coder-0.5B GGUF that
scripts/fetch-models.sh fetches. Its replies are noise; it is for load time, memory and
speed.

Needs gguf-py (llama.cpp's package, in $TINYRUSTLM_CACHE/venv as bench/run.sh makes it).

Usage: reference/synthetic_qwen2_1_5b.py [OUT.gguf]
  (default $TINYRUSTLM_CACHE/fixtures/synthetic-qwen2-1.5b-q4_k.gguf; then
  `slm convert OUT.gguf -o M.slm` keeps the blocks as they are)
"""

import os
import sys

import numpy as np
import gguf

CACHE = os.environ.get("TINYRUSTLM_CACHE", os.path.expanduser("~/.cache/tinyrustlm"))
SOURCE = os.path.join(CACHE, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    CACHE, "fixtures", "synthetic-qwen2-1.5b-q4_k.gguf")

LAYERS, HIDDEN, HEADS, KV_HEADS, FFN, VOCAB = 28, 1536, 12, 2, 8960, 151936
HEAD_DIM = HIDDEN // HEADS
QK_K, Q4_K_BYTES = 256, 144

rng = np.random.default_rng(1234)


def q4_k(rows, cols, d, dmin):
    """rows × cols as Q4_K blocks: random scales, mins and quants; d and dmin fixed."""
    assert cols % QK_K == 0
    b = rng.integers(0, 256, size=(rows, cols // QK_K, Q4_K_BYTES), dtype=np.uint8)
    b[:, :, 0:2] = np.frombuffer(np.float16(d).tobytes(), dtype=np.uint8)
    b[:, :, 2:4] = np.frombuffer(np.float16(dmin).tobytes(), dtype=np.uint8)
    return b.reshape(rows, cols // QK_K * Q4_K_BYTES)


def main():
    src = gguf.GGUFReader(SOURCE)
    w = gguf.GGUFWriter(OUT, "qwen2")
    w.add_name("Synthetic Qwen2 1.5B (random Q4_K weights)")
    w.add_block_count(LAYERS)
    w.add_context_length(32768)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    # The real tokenizer and template, field by field.
    for name, field in src.fields.items():
        if not name.startswith("tokenizer."):
            continue
        main_type = field.types[0]
        if main_type == gguf.GGUFValueType.ARRAY:
            w.add_key_value(name, field.contents(), main_type, sub_type=field.types[1])
        else:
            w.add_key_value(name, field.contents(), main_type)

    # Scales: the mean of d·sc·q − dmin·m near zero (E[q] = 7.5, E[sc] = E[m]), and small
    # enough that 28 layers of residual adds stay finite.
    d, dmin = 2e-4, 1.5e-3
    ones = np.ones(HIDDEN, dtype=np.float32)
    w.add_tensor("token_embd.weight", q4_k(VOCAB, HIDDEN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("output_norm.weight", ones)
    kv = KV_HEADS * HEAD_DIM
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "ffn_norm.weight", ones)
        for name, rows in (("attn_q", HIDDEN), ("attn_k", kv), ("attn_v", kv)):
            w.add_tensor(p + name + ".weight", q4_k(rows, HIDDEN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
            w.add_tensor(p + name + ".bias", (rng.standard_normal(rows) * 0.01).astype(np.float32))
        w.add_tensor(p + "attn_output.weight", q4_k(HIDDEN, HIDDEN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        w.add_tensor(p + "ffn_gate.weight", q4_k(FFN, HIDDEN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        w.add_tensor(p + "ffn_up.weight", q4_k(FFN, HIDDEN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        w.add_tensor(p + "ffn_down.weight", q4_k(HIDDEN, FFN, d, dmin), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    params = VOCAB * HIDDEN + LAYERS * (HIDDEN * (HIDDEN + 2 * kv) + HIDDEN * HIDDEN + 3 * HIDDEN * FFN)
    print(f"wrote {OUT}: {params / 1e9:.2f}B parameters in Q4_K, {os.path.getsize(OUT) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
