#!/usr/bin/env python3
"""Goldens for the sampler: HF transformers' logits processors applied, in generate()'s
order, to fixed logits. The Rust test (runtime/tests/sampler_parity.rs) runs the same
configs through slm_runtime::sampling and compares the surviving set and the values.

Usage: reference/make_sampling_goldens.py   (writes reference/goldens/sampling.json)
"""

import json
import os

import numpy as np
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 64

CONFIGS = [
    dict(temperature=1.0),
    dict(temperature=0.7, top_k=40, top_p=0.9, min_p=0.05, repetition_penalty=1.05),  # chat
    dict(temperature=0.15, top_k=20, top_p=0.95, repetition_penalty=1.05),  # precise
    dict(temperature=0.9, top_k=80, top_p=0.95, min_p=0.03, typical_p=0.95, repetition_penalty=1.03),  # creative
    dict(temperature=0.2, top_k=50, top_p=0.9, repetition_penalty=1.03),  # code
    dict(temperature=1.3, top_k=5),
    dict(temperature=1.0, top_p=0.5),
    dict(temperature=1.0, min_p=0.2),
    dict(temperature=1.0, typical_p=0.6),
    dict(temperature=0.5, repetition_penalty=1.5, top_p=0.8),
]


def apply(logits, context, c):
    scores = torch.tensor([logits], dtype=torch.float32)
    ids = torch.tensor([context], dtype=torch.long)
    procs = []
    if c.get("repetition_penalty", 1.0) != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(c["repetition_penalty"]))
    if c.get("temperature", 1.0) != 1.0:
        procs.append(TemperatureLogitsWarper(c["temperature"]))
    if c.get("top_k", 0):
        procs.append(TopKLogitsWarper(c["top_k"]))
    if c.get("top_p", 1.0) < 1.0:
        procs.append(TopPLogitsWarper(c["top_p"]))
    if c.get("min_p", 0.0):
        procs.append(MinPLogitsWarper(c["min_p"]))
    if c.get("typical_p", 1.0) < 1.0:
        procs.append(TypicalLogitsWarper(c["typical_p"]))
    for p in procs:
        scores = p(ids, scores)
    return [None if not np.isfinite(v) else float(v) for v in scores[0].tolist()]


def main():
    rng = np.random.default_rng(20261129)
    cases = []
    for k, c in enumerate(CONFIGS):
        for trial in range(3):
            logits = (rng.standard_normal(VOCAB) * (1.0 + trial)).astype(np.float32)
            context = rng.integers(0, VOCAB, size=12).tolist()
            cases.append({
                "config": c,
                "logits": [float(v) for v in logits],
                "context": context,
                "expected": apply(logits.tolist(), context, c),
            })
    import transformers
    out = {"reference": {"transformers": transformers.__version__, "torch": torch.__version__}, "cases": cases}
    with open(os.path.join(HERE, "goldens", "sampling.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
