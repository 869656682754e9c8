#!/usr/bin/env bash
# The GPU-host measurements the issues ask for, in steps that each fit one
# 10-minute device command (run from the repository root; source
# .gpu-deps/env.sh first; logs and results go to $OUT, default ./gpu-out).
# The source built is build-src/ when present (a `git archive HEAD` export
# carried to the host), else the working tree.
#
#   bash scripts/gpu/check.sh build                   # g++ + libFuzzer archive, build-gpu/bin
#   bash scripts/gpu/check.sh campaign SECONDS KILL_AT [WORKERS]
#        # a campaign of SECONDS in build-gpu/run, killed with kill -9 at KILL_AT s,
#        # then resumed in the same call for the rest (KILL_AT >= SECONDS: no kill)
#   bash scripts/gpu/check.sh resume LIMIT            # continue it for at most LIMIT s
#   bash scripts/gpu/check.sh verify                  # minimize leftovers, run every repro
#   bash scripts/gpu/check.sh probe [N]               # divfuzz ops --probe=N on cpu and cuda
#   bash scripts/gpu/check.sh feedback on|off SECONDS # one arm of the feedback benchmark
set -euo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
ROOT=$PWD
SRC=$ROOT; [ -d "$ROOT/build-src" ] && SRC=$ROOT/build-src
B=$ROOT/build-gpu
D=$B/bin/fuzz/divfuzz
step=${1:-}; shift || true
case "$step" in
  build)
    cmake -S "$SRC" -B "$B/bin" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" -DDIVFUZZ_LIBFUZZER_ARCHIVE="$LIBFUZZER_ARCHIVE" \
      >"$OUT/cmake.log" 2>&1
    ninja -C "$B/bin" fuzz/divfuzz >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt" ;;
  campaign)
    seconds=$1 kill_at=$2 workers=${3:-4}
    rm -rf "$B/run"; mkdir -p "$B/run"; cd "$B/run"
    timeout -s KILL "$kill_at" "$D" campaign --seconds="$seconds" --workers="$workers" \
      --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$OUT/campaign-1.log" 2>&1 || true
    if [ "$kill_at" -lt "$seconds" ]; then
      sleep 1
      pgrep -f "ru[n]/campaign/corpus" && echo "ORPHAN WORKERS" || echo "no orphan workers"
      "$D" campaign --resume=campaign >"$OUT/campaign-2.log" 2>&1
    fi
    grep -v '^\[' "$OUT"/campaign-*.log | grep -v 'NEW finding' | tail -60 ;;
  resume)
    cd "$B/run"; timeout -s KILL "$1" "$D" campaign --resume=campaign >>"$OUT/campaign-3.log" 2>&1 || true
    tail -40 "$OUT/campaign-3.log" ;;
  verify)
    cd "$B/run"
    python3 -c "
import json
for l in open('findings/index.jsonl'):
    e = json.loads(l)
    if not e.get('minimized') and e['class'] not in ('crash', 'hang'): print('findings/' + e['id'])
" >todo.txt
    echo "not yet minimized: $(wc -l <todo.txt)"
    # Batches of 8 per process: libtorch and CUDA start once per batch.
    xargs -P 8 -n 8 "$D" repro --max_seconds=15 <todo.txt >"$OUT/repro-pass.log" 2>&1 || true
    python3 "$SRC/scripts/verify_repros.py" findings --work campaign --jobs 16 \
      --json "$OUT/verify.json" >"$OUT/verify.log" 2>&1 || true
    grep -A12 '== summary' "$OUT/verify.log"
    cp campaign/report.html campaign/stats.csv "$OUT/" ;;
  probe)
    "$D" ops --probe="${1:-50}" --op_stats="$OUT/op_stats.json" >"$OUT/ops-probe.txt" 2>&1
    tail -30 "$OUT/ops-probe.txt" ;;
  feedback)
    arm=$1 seconds=$2
    rm -rf "$B/fb-$arm"; mkdir -p "$B/fb-$arm"; cd "$B/fb-$arm"
    "$D" campaign --seconds="$seconds" --seed=1 --feedback=$([ "$arm" = on ] && echo true || echo false) \
      --repro_seconds=0 --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$OUT/feedback-$arm.log" 2>&1
    grep -A6 'campaign summary' "$OUT/feedback-$arm.log" ;;
  *) sed -n 2,16p "$0"; exit 2 ;;
esac
