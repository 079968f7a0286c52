#!/usr/bin/env python3
"""Block-format goldens: random blocks of every GGUF type the .slm format stores, and
what gguf-py (llama.cpp's own Python package, `gguf.quants.dequantize`) decodes them
to. runtime/tests/quant_goldens.rs asserts that `quant::dequantize` gives the same
f32 bits, and that every kernel's dot of these blocks matches an f64 dot of them.

Usage: reference/make_quant_goldens.py   (needs only gguf and numpy)
Writes reference/goldens/quant_blocks.json.
"""
import json
import os

import gguf
import numpy as np
from gguf import quants

TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
# Byte offsets of each block's f16 scale fields, which must be finite.
F16_AT = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2],
          "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}
BLOCKS = 6


def blocks(name, rng):
    qt = gguf.GGMLQuantizationType[name]
    _, size = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, size=(BLOCKS, size), dtype=np.uint8)
    # Block 0: every payload bit set (the types' largest codes and scales); block 1:
    # none; the rest random.
    raw[0, :] = 0xFF
    raw[1, :] = 0
    for b in range(BLOCKS):
        for at in F16_AT[name]:
            # Scales of both signs over a wide range, subnormals included; block 1 keeps 0.
            if b == 1:
                continue
            v = np.float16(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-7, 1))
            raw[b, at:at + 2] = np.frombuffer(v.tobytes(), dtype=np.uint8)
    return qt, raw


def main():
    rng = np.random.default_rng(20261201)
    out = {"generator": "reference/make_quant_goldens.py", "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0", "types": {}}
    for name in TYPES:
        qt, raw = blocks(name, rng)
        deq = quants.dequantize(raw, qt).astype(np.float32).reshape(-1)
        out["types"][name] = {
            "blocks_hex": raw.tobytes().hex(),
            "f32_bits": [int(x) for x in deq.view(np.uint32)],
        }
    path = os.path.join(os.path.dirname(__file__), "goldens", "quant_blocks.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
