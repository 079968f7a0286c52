#!/usr/bin/env python3
"""Tiny real-format seeds for the fuzz targets (fuzz/run.sh): a Llama-shaped Hugging Face
directory (config.json, a byte-level BPE tokenizer.json of 260 tokens, tokenizer_config.json
with a ChatML template, generation_config.json, model.safetensors in f32) and the same
model as a GGUF with its tokenizer metadata. Each file is a few kB, so that a fuzzer runs
thousands of inputs a second through every stage instead of hashing megabytes.

Usage: fuzz/seeds.py OUT_DIR   (needs numpy and gguf: ~/.cache/tinyrustlm/venv)
then:  slm convert OUT_DIR/hf -o OUT_DIR/tiny.slm   (the committed tiny.slm)
"""
import json
import os
import struct
import sys

import numpy as np
import gguf

out = sys.argv[1]
hf = os.path.join(out, "hf")
os.makedirs(hf, exist_ok=True)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from byte_level import bytes_to_unicode  # noqa: E402  (GPT-2's byte table)


chars = bytes_to_unicode()
vocab = {chars[b]: b for b in range(256)}
specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
vocab["Ġt"] = 256  # one merge: GGUF needs a merges array that is not empty
for i, s in enumerate(specials):
    vocab[s] = 257 + i
V, H, I, L, NH, NKV = 260, 16, 32, 1, 2, 1
tokenizer = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [
        {"id": 257 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, s in enumerate(specials)
    ],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": False, "vocab": vocab, "merges": ["Ġ t"]},
}
template = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
            "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
config = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
    "intermediate_size": I, "num_hidden_layers": L, "num_attention_heads": NH,
    "num_key_value_heads": NKV, "vocab_size": V, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True,
    "hidden_act": "silu", "bos_token_id": 257, "eos_token_id": 259, "torch_dtype": "float32",
}
json.dump(tokenizer, open(os.path.join(hf, "tokenizer.json"), "w"), ensure_ascii=False)
json.dump({"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "chat_template": template,
           "tokenizer_class": "GPT2Tokenizer"}, open(os.path.join(hf, "tokenizer_config.json"), "w"))
json.dump(config, open(os.path.join(hf, "config.json"), "w"))
json.dump({"bos_token_id": 257, "eos_token_id": 259, "do_sample": True, "temperature": 0.7},
          open(os.path.join(hf, "generation_config.json"), "w"))

rng = np.random.default_rng(1)
hd = H // NH
shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
for l in range(L):
    p = f"model.layers.{l}."
    shapes.update({
        p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
        p + "self_attn.q_proj.weight": (NH * hd, H), p + "self_attn.k_proj.weight": (NKV * hd, H),
        p + "self_attn.v_proj.weight": (NKV * hd, H), p + "self_attn.o_proj.weight": (H, NH * hd),
        p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H), p + "mlp.down_proj.weight": (H, I),
    })
tensors = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
header, blobs, off = {}, [], 0
for k, v in tensors.items():
    b = v.tobytes()
    header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(header).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(hf, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

# The same model as a GGUF (llama.cpp's names and metadata).
w = gguf.GGUFWriter(os.path.join(out, "tiny.gguf"), "llama")
w.add_context_length(256)
w.add_embedding_length(H)
w.add_block_count(L)
w.add_feed_forward_length(I)
w.add_head_count(NH)
w.add_head_count_kv(NKV)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(10000.0)
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre("qwen2")
toks = [chars[b] for b in range(256)] + ["Ġt"] + specials
w.add_token_list(toks)
w.add_token_types([1] * 257 + [3] * 3)
w.add_token_merges(["Ġ t"])
w.add_bos_token_id(257)
w.add_eos_token_id(259)
w.add_chat_template(template)
names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
for l in range(L):
    p, g = f"model.layers.{l}.", f"blk.{l}."
    names.update({p + "input_layernorm.weight": g + "attn_norm.weight",
                  p + "post_attention_layernorm.weight": g + "ffn_norm.weight",
                  p + "self_attn.q_proj.weight": g + "attn_q.weight", p + "self_attn.k_proj.weight": g + "attn_k.weight",
                  p + "self_attn.v_proj.weight": g + "attn_v.weight", p + "self_attn.o_proj.weight": g + "attn_output.weight",
                  p + "mlp.gate_proj.weight": g + "ffn_gate.weight", p + "mlp.up_proj.weight": g + "ffn_up.weight",
                  p + "mlp.down_proj.weight": g + "ffn_down.weight"})
for k, v in tensors.items():
    w.add_tensor(names[k], v)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"seeds in {out}")
