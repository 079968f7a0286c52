"""Validate the TinyRustLM evaluation sets (python3, stdlib only).

eval/clarify.jsonl: underspecified prompts (the model should ask a clarifying
question) and control prompts (the model should just answer).
eval/clarify_heldout.jsonl: the same kinds of prompt, by a second author.
eval/clarify_fresh.jsonl: the same again, by a third author who saw neither the rules nor
the other sets.
eval/labels.jsonl: hand labels of replies to them (the scorer's check).
eval/loops.jsonl: short, fully specified utility prompts.

Run: python3 eval/check_sets.py   (exits non-zero on the first failed check)
"""
import json
import re
import os
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = {"underspecified", "control"}
CATEGORIES = {"translate", "fix", "code", "recommendation", "json", "math",
              "scheduling", "comparison", "summarize", "referent", "live"}
SLOTS = {"text", "target_language", "programming_language", "location", "schema",
         "quantity", "date_time", "criteria", "items", "referent"}
LOOP_CATEGORIES = {"rewrite", "summarize", "explain_code", "extract_json", "factual"}


def load(name):
    rows = []
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            assert line.strip(), f"{name}:{n}: blank line"
            rows.append(json.loads(line))
    ids = [r["id"] for r in rows]
    dup = [i for i, c in Counter(ids).items() if c > 1]
    assert not dup, f"{name}: duplicate ids {dup}"
    return rows


def check_clarify(name="clarify.jsonl", minimum=150, per_category=14, min_twins=100):
    rows = load(name)
    by_id = {r["id"]: r for r in rows}
    keys = {"id", "set", "category", "prompt", "missing", "no_answer", "twin"}
    for r in rows:
        rid = r["id"]
        assert set(r) == keys, f"{rid}: fields {sorted(r)}"
        assert r["set"] in SETS and r["category"] in CATEGORIES, rid
        assert isinstance(r["prompt"], str) and 0 < len(r["prompt"]) < 600, rid
        assert isinstance(r["no_answer"], bool), rid
        assert isinstance(r["missing"], list) and set(r["missing"]) <= SLOTS, rid
        assert len(set(r["missing"])) == len(r["missing"]), rid
        if r["set"] == "control":
            assert r["missing"] == [] and r["no_answer"] is False, rid
            if r["twin"] is not None:
                t = by_id.get(r["twin"])
                assert t is not None and t["set"] == "underspecified", rid
        else:
            assert r["missing"] and r["twin"] is None, rid
    prompts = Counter(r["prompt"] for r in rows)
    assert max(prompts.values()) == 1, "duplicate prompts"
    under = Counter(r["category"] for r in rows if r["set"] == "underspecified")
    ctrl = Counter(r["category"] for r in rows if r["set"] == "control")
    twins = sum(1 for r in rows if r["set"] == "control" and r["twin"])
    assert sum(under.values()) >= minimum, f"need >= {minimum} underspecified"
    assert sum(ctrl.values()) >= minimum, f"need >= {minimum} controls"
    assert sum(1 for c in under.values() if c >= per_category) >= 10, \
        f"need >= 10 categories with >= {per_category}"
    assert twins >= min_twins, f"only {twins} twins"
    print(f"{name}:", len(rows), "rows,", twins, "twins")
    print(f"  {'category':16}{'under':>6}{'no_ans':>7}{'ctrl':>6}")
    for c in sorted(CATEGORIES):
        na = sum(1 for r in rows if r["category"] == c and r["no_answer"])
        print(f"  {c:16}{under[c]:>6}{na:>7}{ctrl[c]:>6}")
    print(f"  {'total':16}{sum(under.values()):>6}"
          f"{sum(r['no_answer'] for r in rows):>7}{sum(ctrl.values()):>6}")


def check_labels():
    """eval/labels.jsonl: hand labels of replies, each naming a case of a clarify set."""
    cases = {}
    for name in ("clarify.jsonl", "clarify_heldout.jsonl", "clarify_fresh.jsonl"):
        for r in load(name):
            cases[(name, r["id"])] = r
    # What each label answers, and the batches (docs/behaviour.md, "The rubric").
    kinds = {
        "useful clarification": (
            "calibration", "after calibration", "lead", "before-lead", "lead-per-kind", "retry",
        ),
        "false clarification": ("calibration", "after calibration"),
        "fabrication": ("fabrication-calibration", "fabrication-fresh"),
    }
    n = Counter()
    with open(os.path.join(HERE, "labels.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            c = cases.get((r["file"], r["id"]))
            assert c is not None, f"labels: unknown case {r['file']} {r['id']}"
            assert r["missing"] == c["missing"], r["id"]
            assert r["underspecified"] == (c["set"] == "underspecified"), r["id"]
            assert r["no_answer"] == c["no_answer"], r["id"]
            kind = r["label_means"]
            # The every-ninth samples of final replies end in "-final", their replies
            # relabelled after a change in "-final-now" (as the catalog test reads them).
            final = kind == "useful clarification" and re.fullmatch(r"[a-z-]+-final(-now)?", r["batch"])
            assert kind in kinds and (r["batch"] in kinds[kind] or final), (r["id"], kind, r["batch"])
            assert (kind == "false clarification") == (not r["underspecified"]), r["id"]
            assert kind != "fabrication" or r["no_answer"], r["id"]
            assert isinstance(r["label"], bool), r["id"]
            n[kind] += 1
    clarification = n["useful clarification"] + n["false clarification"]
    assert clarification >= 60 and n["fabrication"] >= 60, f"need >= 60 hand labels of each kind: {n}"
    print("labels.jsonl:", sum(n.values()), "labels", dict(n))


def check_loops():
    rows = load("loops.jsonl")
    for r in rows:
        assert set(r) == {"id", "category", "prompt"}, r["id"]
        assert r["category"] in LOOP_CATEGORIES, r["id"]
        assert 0 < len(r["prompt"]) < 700, r["id"]
    cats = Counter(r["category"] for r in rows)
    assert len(rows) >= 80 and set(cats) == LOOP_CATEGORIES, "loops: size/categories"
    assert min(cats.values()) >= 16, "loops: need >= 16 per category"
    print("loops.jsonl:", len(rows), "rows")
    for c in sorted(cats):
        print(f"  {c:16}{cats[c]:>4}")


if __name__ == "__main__":
    check_clarify()
    check_clarify("clarify_heldout.jsonl", minimum=88, per_category=8, min_twins=55)
    check_clarify("clarify_fresh.jsonl", minimum=88, per_category=8, min_twins=55)
    check_labels()
    check_loops()
    print("OK")
