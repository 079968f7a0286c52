"""How the clarify probe's layer was chosen (docs/behaviour.md, "The clarify probe").

For each layer, fit a logistic read of the residual stream on all sets but one author's,
and report the area under the curve (underspecified against controls) on the held-out
author, beside the area that prompt length alone gives. `slm eval probe` fits the probe
itself; this script only compares layers. numpy only.

  cargo run --release -p slm-runtime --example hidden_dump -- M.slm /tmp/h.f32 \\
      eval/clarify.jsonl eval/clarify_fresh.jsonl eval/clarify_heldout.jsonl \\
      eval/probes/clarify_probe{4,5,6,7}.jsonl
  python3 eval/probe_explore.py /tmp/h.f32 LAYERS HIDDEN [layer,layer,...]
"""
import json
import sys

import numpy as np

path, L, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X = np.fromfile(path, dtype="<f4").reshape(-1, L, H)
meta = [json.loads(l) for l in open(path + ".jsonl")]
y = np.array([m["set"] == "underspecified" for m in meta], float)
g = np.array([m["file"] for m in meta])
prompts = {}
for f in set(g):
    prompts[f] = {json.loads(l)["id"]: json.loads(l)["prompt"] for l in open(f)}
length = np.array([len(prompts[m["file"]][m["id"]]) for m in meta], float)


def fit(Z, t, lam=1e-2, steps=600, rate=1e-2):
    mu, sd = Z.mean(0), Z.std(0) + 1e-6
    Z = (Z - mu) / sd
    w, b = np.zeros(Z.shape[1]), 0.0
    m1, v1, mb, vb = np.zeros_like(w), np.zeros_like(w), 0.0, 0.0
    for i in range(1, steps + 1):
        e = 1 / (1 + np.exp(-(Z @ w + b))) - t
        gw, gb = Z.T @ e / len(t) + lam * w, e.mean()
        m1, v1 = 0.9 * m1 + 0.1 * gw, 0.999 * v1 + 0.001 * gw * gw
        mb, vb = 0.9 * mb + 0.1 * gb, 0.999 * vb + 0.001 * gb * gb
        c1, c2 = 1 - 0.9**i, 1 - 0.999**i
        w -= rate * (m1 / c1) / (np.sqrt(v1 / c2) + 1e-8)
        b -= rate * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return lambda Q: ((Q - mu) / sd) @ w + b


def auc(s, t):
    pos, neg = s[t == 1], s[t == 0]
    return (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()


layers = [int(x) for x in sys.argv[4].split(",")] if len(sys.argv) > 4 else range(0, L, 2)
for test in sorted(set(g)):
    te = g == test
    print(f"{test}: prompt length alone {1 - auc(length[te], y[te]):.3f}")
for li in layers:
    row = []
    for test in sorted(set(g)):
        te = g == test
        f = fit(X[~te, li], y[~te])
        row.append(f"{test.split('/')[-1]} {auc(f(X[te, li]), y[te]):.3f}")
    print(f"layer {li}: " + ", ".join(row), flush=True)
