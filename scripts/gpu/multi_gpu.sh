#!/usr/bin/env bash
# Several GPUs on one host (issue 34): a short campaign on one GPU, then one on every GPU with a
# fault injected on GPU 0's MPS server; prints programs/s per GPU, restarts per GPU and whether
# the fault paused the other GPUs' workers. Under 4 minutes on a host (SECONDS=60 default).
# Run from the repository root after `bash scripts/gpu/check.sh build` (source .gpu-deps/env.sh
# first); results go to $OUT as they come (multi-<n>gpu-*.log, samples-*.csv, result.txt).
#
#   bash scripts/gpu/multi_gpu.sh [SECONDS] [WORKERS_PER_GPU]      # defaults 60 4
#
# The fault: at SECONDS/3 the MPS server of GPU 0 is killed with SIGKILL (the child of the control
# daemon whose pid the campaign writes to logs/mps/gpu0/daemon.pid), as a CUDA fault takes a
# server's clients down. FAULT=worker kills one GPU-0 worker instead (no MPS needed). Every 2 s
# the executions of each GPU's workers are sampled (logs/stats-<slot>-<gen>.json); a GPU whose
# count did not grow in the 10 s after the fault was paused by it.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
ROOT=$PWD
B=${B:-$ROOT/build-gpu}
D=${DIVFUZZ:-$B/bin/fuzz/divfuzz}
SECS=${1:-60}
W=${2:-4}
FAULT=${FAULT:-mps}
[ -x "$D" ] || { echo "no $D: run bash scripts/gpu/check.sh build first"; exit 2; }
NGPU=$(nvidia-smi -L | wc -l)
RESULT=$OUT/result.txt
echo "host: $(hostname), $NGPU GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)" | tee "$RESULT"
echo "campaigns of $SECS s, $W workers a GPU; fault: $FAULT on GPU 0 at $((SECS / 3)) s" | tee -a "$RESULT"

# Executions of each GPU's workers now (slot i is on GPU i / W: GpuSlots' order).
sample() {  # work_dir ngpu
  python3 - "$1" "$2" "$W" <<'PY'
import glob, json, re, sys
work, ngpu, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = [0] * ngpu
for f in glob.glob(work + "/logs/stats-*-*.json"):
    m = re.search(r"stats-(\d+)-\d+\.json$", f)
    try:
        per[min(int(m.group(1)) // w, ngpu - 1)] += json.load(open(f)).get("executions", 0)
    except Exception:
        pass
print(",".join(map(str, per)))
PY
}

run() {  # ngpu label inject(0|1)
  local n=$1 label=$2 inject=$3
  local dir=$B/multi-$label
  rm -rf "$dir"; mkdir -p "$dir"
  local devices; devices=$(seq -s, 0 $((n - 1)))
  (cd "$dir" && CUDA_VISIBLE_DEVICES=$devices exec "$D" campaign --seconds="$SECS" --workers="$W" \
     --seed=1 --corpus="$ROOT/corpus/seed,$ROOT/corpus/families") > "$OUT/multi-$label.log" 2>&1 &
  local pid=$! t=0 fault_at=$((SECS / 3)) injected=-1
  echo "t,$(seq -s, -f 'gpu%g' 0 $((n - 1)))" > "$OUT/samples-$label.csv"
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2; t=$((t + 2))
    echo "$t,$(sample "$dir/campaign" "$n")" >> "$OUT/samples-$label.csv"
    if [ "$inject" = 1 ] && [ "$injected" -lt 0 ] && [ "$t" -ge "$fault_at" ]; then
      injected=$t
      if [ "$FAULT" = mps ] && [ -f "$dir/campaign/logs/mps/gpu0/daemon.pid" ]; then
        daemon=$(cat "$dir/campaign/logs/mps/gpu0/daemon.pid")
        echo "t=$t: killing GPU 0's MPS server (children of daemon $daemon): $(pgrep -P "$daemon" | xargs)" | tee -a "$RESULT"
        pkill -KILL -P "$daemon"
      else
        victim=
        for p in $(pgrep -f -- "-artifact_prefix=.*crashes/"); do  # slot 0's worker: GPU 0
          grep -qz "^DIVFUZZ_INFLIGHT=.*logs/inflight-0\$" "/proc/$p/environ" 2>/dev/null && victim=$p
        done
        echo "t=$t: killing GPU 0's worker $victim (FAULT=$FAULT or no per-GPU MPS)" | tee -a "$RESULT"
        [ -n "$victim" ] && kill -KILL "$victim"
      fi
    fi
  done
  wait "$pid"; echo "campaign exit $?" >> "$OUT/multi-$label.log"
  echo "== $label" | tee -a "$RESULT"
  grep -E "MPS:|per GPU:|exec/s per worker|restarted it and its|cannot be restarted|met a CUDA fault|executions:" \
    "$OUT/multi-$label.log" | tee -a "$RESULT"
  if [ "$injected" -ge 0 ]; then
    python3 - "$OUT/samples-$label.csv" "$injected" <<'PY' | tee -a "$RESULT"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, data = rows[0], [list(map(int, r)) for r in rows[1:]]
at = int(sys.argv[2])
before = [r for r in data if r[0] <= at][-1]
after = [r for r in data if r[0] <= at + 10][-1]
for g in range(1, len(head)):
    grew = after[g] - before[g]
    print(f"{head[g]}: {grew} executions in the 10 s after the fault at t={at}: "
          + ("NOT paused" if grew > 0 else "PAUSED") + ("" if g > 1 else " (the faulted GPU)"))
PY
  fi
}

run 1 1gpu 0
[ "$NGPU" -gt 1 ] && run "$NGPU" "${NGPU}gpu" 1
echo "results: $RESULT" 
