#!/usr/bin/env python3
"""Decode goldens: what HF transformers' tokenizer.decode returns for ~70 id lists per
tokenizer (encoded real texts, special/added tokens, UTF-8 cut in half, byte-fallback
tokens, single ids, seeded random ids), with skip_special_tokens False and True.

Writes reference/goldens/decode/<model>.json. Where the raw `tokenizers` library, run on
the same tokenizer.json, decodes a list differently, that is recorded next to it
(`tokenizers_decode` / `tokenizers_decode_skip`) and counted at the top.

Usage: reference/make_decode_goldens.py [model ...]   (default: all)
Needs the reference stack (reference/requirements.txt) and scripts/fetch-models.sh.
"""

import json
import os
import random
import shutil
import sys
import tempfile

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cases import CASES, NFC, NFD  # noqa: E402

CACHE = os.environ.get("TINYRUSTLM_CACHE", os.path.expanduser("~/.cache/tinyrustlm"))
MODELS = os.path.join(CACHE, "models")
NPM = os.path.join(CACHE, "npm")
OUT = os.path.join(HERE, "goldens", "decode")

MODEL_SPECS = {
    "smollm2": ("gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "qwen2.5": ("gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "llama3_1": ("npm", "llama3_1"),
    "llama2": ("npm", "llama2"),
    "qwen3": ("npm", "qwen3"),
    "gemma3": ("npm", "gemma3"),
}

EXTRA_TEXTS = [
    "Hello , world . Is n't it ? Yes ! I 'm sure , it 's fine .",
    "I don't know. We're here, they've gone, you'll see. Isn't it?",
    " .", " ,", " ?", " !", "n't", " n't", " 's", " ' ", "a ' b",
    " leading space", "   three leading spaces", "\nnewline first", "trailing space ", "\t\ttabs",
    "", " ", "  ", "\n", "\n\n\n",
    "\u00e9\u00e8\u00ea \u00fc\u00f6\u00e4 \u00df \u00f1",
    "\U0001F600\U0001F680 \U0001F1EF\U0001F1F5 \u2764\ufe0f",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "x = [1, 2, 3]; print(x[0]) # comment",
    "\u0000 nul and \u007f del and \u200b zwsp",
]


from byte_level import bytes_to_unicode  # noqa: E402  (GPT-2's byte table)


def load(model):
    kind, src = MODEL_SPECS[model]
    if kind == "gguf":
        tok = AutoTokenizer.from_pretrained(MODELS, gguf_file=src)
        raws = {"transformers_backend_graph": Tokenizer.from_str(tok.backend_tokenizer.to_str())}
        if model == "qwen2.5":
            # make_goldens.qwen25_original_tokenizer (inlined: that module imports torch)
            j = json.load(open(os.path.join(NPM, "qwen3", "package", "models", "tokenizer.json"), encoding="utf-8"))
            j["added_tokens"] = [t for t in j["added_tokens"] if t["id"] < 151665]
            raws["qwen2.5_original_tokenizer_json"] = Tokenizer.from_str(json.dumps(j))
        source = f"gguf:{src}"
        loader = "AutoTokenizer.from_pretrained(models_dir, gguf_file=FILE)"
    else:
        d = os.path.join(NPM, src, "package", "models")
        tmp = tempfile.mkdtemp(prefix=f"dec-{src}-")
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(d, f), tmp)
        tok = AutoTokenizer.from_pretrained(tmp)
        shutil.rmtree(tmp)
        source = f"npm/{src}/package/models/tokenizer.json"
        raws = {"tokenizer_json": Tokenizer.from_file(os.path.join(CACHE, source))}
        loader = "AutoTokenizer.from_pretrained(dir with the package's tokenizer.json + tokenizer_config.json)"
    return tok, raws, source, loader


def id_lists(model, tok):
    """-> list of (name, ids)"""
    enc = lambda t, special=False: tok.encode(t, add_special_tokens=special)  # noqa: E731
    vocab = tok.get_vocab()
    n = len(tok)
    out = []
    seen_text = set()
    for cname, messages, _ in CASES:
        for m in messages:
            if m["role"] == "user" and m["content"] not in seen_text:
                seen_text.add(m["content"])
                out.append((f"text:{cname}", enc(m["content"])))
    for i, t in enumerate(EXTRA_TEXTS):
        out.append((f"text:extra{i}:{t[:24]!r}", enc(t)))
    for t in ["Hello world", " Hello", NFD]:
        out.append((f"text_with_specials:{t[:12]!r}", enc(t, True)))

    # Special and added tokens.
    specials = [i for i in [tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id] if i is not None]
    added = sorted(tok.added_tokens_decoder.items())
    added_special = [i for i, t in added if t.special][:6]
    added_plain = [i for i, t in added if not t.special][:4]
    hello = enc("Hello, world!")
    if specials:
        out.append(("special:named_alone", specials))
        out.append(("special:first+text+last", [specials[0]] + hello + [specials[-1]]))
        out.append(("special:text+named+space_text", enc("Hi") + [specials[0]] + enc(" there") + [specials[-1]] + enc(" again")))
    if added_special:
        out.append(("special:added_special_run", added_special))
        out.append(("special:added_special_between_text", enc("A") + added_special[:2] + enc(" B") + added_special[:1] + enc("\nC")))
    if added_plain:
        out.append(("special:added_nonspecial", added_plain + enc(" x") + added_plain[:1]))
    for t in ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<think>"]:
        if t in vocab:
            out.append((f"special:chat:{t}", [vocab[t]] + enc("user\nHi there") + [vocab[t]] + enc("\n")))
    if all(t in vocab for t in ["<|im_start|>", "<|im_end|>"]):
        out.append(("special:chatml_turn", [vocab["<|im_start|>"]] + enc("assistant\nSure .") + [vocab["<|im_end|>"]] + enc("\n")))

    # UTF-8 cut in half.
    multi = enc("\u4e2d\U0001F600\u00e9")
    for k in range(1, len(multi)):
        out.append((f"partial:prefix{k}", multi[:k]))
        out.append((f"partial:suffix{k}", multi[k:]))
    b2u = bytes_to_unicode()
    if all(f"<0x{b:02X}>" in vocab for b in range(256)):  # SentencePiece byte fallback
        spell, kind = (lambda b: f"<0x{b:02X}>"), "byte_fallback"
    elif sum(b2u[b] in vocab for b in range(256)) >= 200:  # ByteLevel vocabulary (SmolLM2 lacks a few bytes)
        spell, kind = (lambda b: b2u[b]), "byte_level"
    else:
        spell, kind = None, None
    if spell:
        def add(name, prefix, bs, suffix=()):
            if all(spell(b) in vocab for b in bs):
                out.append((f"{kind}:{name}", list(prefix) + [vocab[spell(b)] for b in bs] + list(suffix)))

        emoji = "\U0001F600".encode("utf-8")  # F0 9F 98 80
        han = "\u4e2d".encode("utf-8")  # E4 B8 AD
        for k in range(1, 5):
            add(f"emoji_bytes[:{k}]", [], emoji[:k])
        add("lone_continuation", [], [0x9F])
        add("han_bytes+text", enc("a"), han, enc(" b"))
        add("cut_han+text", enc("a"), han[:2], enc(" b"))
        add("cut_han+han", [], han[:1] + han)
        add("invalid_lead_FF", [], [0xFF, 0x41])
        add("ascii_controls", [], [0x00, 0x09, 0x0A, 0x20, 0x7F])
        add("overlong_C0_80", [], [0xC0, 0x80])
        add("surrogate_ED_A0_80", [], [0xED, 0xA0, 0x80])
        add("above_max_F4_90_80_80", [], [0xF4, 0x90, 0x80, 0x80])

    # Single ids.
    for i in sorted({0, 1, 2, 3, 10, 100, 1000, n // 2, n - 1} | set(specials)):
        out.append((f"single:{i}", [i]))
    out.append(("single:out_of_range", [n + 10]))

    # Seeded random ids (over the whole id space, added tokens included).
    rng = random.Random(f"tinyrustlm-decode-{model}")
    for r in range(10):
        out.append((f"random:{r}", [rng.randrange(n) for _ in range(rng.randint(1, 24))]))
    return out, kind


def safe_decode(f, ids, **kw):
    try:
        return {"ok": f(ids, **kw)}
    except Exception as e:  # noqa: BLE001
        return {"error": {"type": type(e).__name__, "message": str(e)}}


def run(model):
    tok, raws, source, loader = load(model)
    bpe = type(tok.backend_tokenizer.model).__name__ == "BPE"
    cleanup = bool(tok.clean_up_tokenization_spaces)
    effective = cleanup and not (bpe and not tok.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output)
    lists, byte_kind = id_lists(model, tok)
    records = []
    n_diff = {k: 0 for k in raws}
    for name, ids in lists:
        rec = {"name": name, "ids": ids}
        a = safe_decode(tok.decode, ids, skip_special_tokens=False)
        b = safe_decode(tok.decode, ids, skip_special_tokens=True)
        for key, r in (("decode", a), ("decode_skip_special", b)):
            if "ok" in r:
                rec[key] = r["ok"]
            else:
                rec[key + "_error"] = r["error"]
        for rname, raw in raws.items():
            ra = safe_decode(raw.decode, ids, skip_special_tokens=False)
            rb = safe_decode(raw.decode, ids, skip_special_tokens=True)
            if ra != a or rb != b:
                n_diff[rname] += 1
                rec.setdefault("tokenizers_decode", {})[rname] = {
                    "decode": ra.get("ok", ra.get("error")),
                    "decode_skip_special": rb.get("ok", rb.get("error")),
                }
        records.append(rec)
    doc = {
        "model": model,
        "tokenizer_json": source,
        "loader": loader,
        "transformers_class": type(tok).__name__,
        "backend_model": type(tok.backend_tokenizer.model).__name__,
        "vocab_size_with_added": len(tok),
        "byte_tokens": byte_kind,
        "clean_up_tokenization_spaces": cleanup,
        "clean_up_applied": effective,
        "clean_up_note": "transformers 5.24 TokenizersBackend._decode skips clean_up_tokenization for BPE models "
                         "unless clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output is set",
        "special_tokens_map": tok.special_tokens_map,
        "special_ids_skipped": sorted(tok.all_special_ids),
        "raw_tokenizers_compared": {k: {"lists_that_differ": v} for k, v in n_diff.items()},
        "reference": {
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "decode": "tok.decode(ids, skip_special_tokens=False|True); tokenizers_decode: raw Tokenizer.decode where it differs",
        },
        "cases": records,
    }
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"{model}.json")
    cases = doc.pop("cases")
    head = json.dumps(doc, ensure_ascii=False, indent=1)
    body = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ',\n "cases": [\n' + body + "\n ]\n}\n")
    json.load(open(path, encoding="utf-8"))
    print(f"[{model}] {len(records)} lists, cleanup={cleanup} applied={effective}, raw diffs {n_diff}", flush=True)


def main():
    for m in sys.argv[1:] or list(MODEL_SPECS):
        if m not in MODEL_SPECS:
            sys.exit(f"unknown model {m!r}")
        run(m)


if __name__ == "__main__":
    main()
