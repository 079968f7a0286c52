#!/usr/bin/env bash
# Fuzz every target for SECS seconds each (default 60; the summary in docs/fuzzing.md
# comes from 1800-second runs), JOBS at a time (default 1), from corpora seeded with
# real files: fuzz/seeds (made by fuzz/seeds.py), the committed chat templates.
#   fuzz/run.sh [SECS] [target ...]        e.g. fuzz/run.sh 20   (CI's smoke run)
# Corpora and findings live in $TINYRUSTLM_CACHE/fuzz/<target>/ (not in the repo);
# each run's last status line goes to $TINYRUSTLM_CACHE/fuzz/<target>.log. Exits
# non-zero when a target finds a crash, a leak, an out-of-memory or a timeout.
set -euo pipefail
cd "$(dirname "$0")"
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(slm_file slm_manifest gguf_import hf_import tokenizer template)
CACHE=${TINYRUSTLM_CACHE:-$HOME/.cache/tinyrustlm}
OUT=$CACHE/fuzz
export CARGO_TARGET_DIR=$CACHE/target-fuzz
mkdir -p "$OUT"

for t in "${TARGETS[@]}"; do cargo +nightly fuzz build -O "$t" >/dev/null; done

# Seed corpora, once (a corpus keeps growing across runs).
seed() { # target, then files
  local c=$OUT/$1/corpus
  mkdir -p "$c"
  shift
  for f in "$@"; do cp -n "$f" "$c/" 2>/dev/null || true; done
}
# `common::split` inputs: 4-byte little-endian length of the first part, both parts.
pair() { # out, first file, second file
  python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
a, b = open(sys.argv[2], 'rb').read(), open(sys.argv[3], 'rb').read()
open(sys.argv[1], 'wb').write(struct.pack('<I', len(a)) + a + b)
PY
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - seeds/tiny.slm "$tmp/manifest.json" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<Q', b, 16)[0]
open(sys.argv[2], 'wb').write(b[56:56 + n])
PY
printf 'Hello wörld <|im_start|>user\n  tabs\tand 🙂 emoji' > "$tmp/text"
pair "$tmp/hf.bin" seeds/hf/config.json seeds/hf/model.safetensors
pair "$tmp/tok.bin" seeds/hf/tokenizer.json "$tmp/text"
i=0
for g in ../reference/goldens/templates/*.json; do
  python3 - "$g" "$tmp/tpl$i.src" "$tmp/tpl$i.msgs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
open(sys.argv[2], 'w').write(d['template'])
msgs = next((c['messages'] for c in d.get('reference', {}).get('cases', []) if 'messages' in c), None)
open(sys.argv[3], 'w').write(json.dumps(msgs or [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "2+2?"}]))
PY
  pair "$tmp/tpl$i.bin" "$tmp/tpl$i.src" "$tmp/tpl$i.msgs"
  i=$((i + 1))
done
seed slm_file seeds/tiny.slm
seed slm_manifest "$tmp/manifest.json"
seed gguf_import seeds/tiny.gguf
seed hf_import "$tmp/hf.bin"
seed tokenizer "$tmp/tok.bin"
seed template "$tmp"/tpl*.bin

status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$OUT/$t/artifacts"
  # 20 s per input, 4 GB of memory (the hostile-input review's limits); inputs up to
  # 256 kB (the seeds are below 40 kB).
  if ! cargo +nightly fuzz run -O "$t" "$OUT/$t/corpus" -- \
      -max_total_time="$SECS" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=4096 \
      -max_len=262144 -artifact_prefix="$OUT/$t/artifacts/" -print_final_stats=1 \
      > "$OUT/$t.log" 2>&1; then
    echo "fuzz: $t FOUND A FAILURE (see $OUT/$t.log and $OUT/$t/artifacts/)" >&2
    tail -n 40 "$OUT/$t.log" >&2
    status=1
  fi
  echo "fuzz: $t: $(grep -E '^#[0-9]+' "$OUT/$t.log" | tail -n 1)"
  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$OUT/$t.log" | tr '\n' ' '
  echo
done
exit $status
