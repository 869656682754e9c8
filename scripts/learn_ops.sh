#!/usr/bin/env bash
# Relearns the generic ops' argument forms on this host's targets (cpu, and cuda
# where there is one) and rewrites ops/generic_table.txt; rebuild afterwards.
# Runs one learner per shard; a learner killed by a kernel crash, a CUDA fault
# or the per-shard time limit is restarted and drops the op it died in.
#   bash scripts/learn_ops.sh [SHARDS=nproc] [TRIES=3] [SECONDS_PER_RUN=900]
set -euo pipefail
cd "$(dirname "$0")/.."
shards=${1:-$(nproc)}
tries=${2:-3}
limit=${3:-900}
bin=${DIVFUZZ:-build/fuzz/divfuzz}
work=$(mktemp -d)
for ((k = 0; k < shards; k++)); do
  (
    for attempt in 1 2 3 4 5 6 7 8; do
      if OMP_NUM_THREADS=1 timeout "$limit" "$bin" ops --learn="$tries" --shard="$k/$shards" \
        --out="$work/shard_$k.txt" >/dev/null 2>>"$work/log_$k.txt"; then
        break
      fi
    done
  ) &
done
wait
grep -h "killed the last learner" "$work"/log_*.txt || true
{
  grep -h "^# devices" "$work/shard_0.txt" | head -1
  echo "# Learned by scripts/learn_ops.sh (divfuzz ops --learn=$tries): per op, every (dtype, shape"
  echo "# form) tried: accepted/tried on all devices at once, then device=accepted per device."
  # An op that killed its learner (a kernel crash or hang on some input) keeps
  # the forms the previous table had: one bad input does not make it unusable.
  cat "$work"/shard_*.txt | grep -v "^#" | sort |
    awk 'NR == FNR { if (!/^#/ && NF > 1) old[$1] = $0; next }
         NF == 1 && ($1 in old) { print old[$1]; kept++; next } { print }
         END { if (kept) print kept " op(s) kept their previous forms" > "/dev/stderr" }' \
      ops/generic_table.txt -
} >"$work/table.txt"
mv "$work/table.txt" ops/generic_table.txt
echo "wrote ops/generic_table.txt ($(grep -vc '^#' ops/generic_table.txt) ops); logs in $work"
