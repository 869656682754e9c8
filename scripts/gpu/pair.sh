#!/usr/bin/env bash
# Two campaigns one after the other on the GPU host (issue 18's before/after),
# detached so they outlive a device call: ARM=flags pairs, e.g.
#   bash scripts/gpu/pair.sh SECONDS WORKERS "v1:" "v16:--variants=16"
# Each runs in $B/pair-NAME (findings, campaign) with its log in $B/pair-NAME.log;
# $B/pair.done when all are done. Watch with: bash scripts/gpu/pair.sh watch LIMIT
set -uo pipefail
B=${B:?}; D=${DIVFUZZ:?}; SRC=$PWD
if [ "$1" = watch ]; then
  limit=$2 start=$SECONDS
  while [ ! -e "$B/pair.done" ] && [ $((SECONDS - start)) -lt "$limit" ]; do
    sleep 30
    for l in "$B"/pair-*.log; do echo "$(basename "$l"): $(tr '\r' '\n' <"$l" | grep -a 'execs (' | tail -1)"; done
  done
  [ -e "$B/pair.done" ] && echo "PAIR DONE" || echo "still running"
  exit 0
fi
seconds=$1 workers=$2; shift 2
rm -f "$B/pair.done"
setsid nohup bash -c '
  seconds=$1 workers=$2 B=$3 D=$4 SRC=$5; shift 5
  for arm in "$@"; do
    name=${arm%%:*} flags=${arm#*:}
    rm -rf "$B/pair-$name"; mkdir -p "$B/pair-$name"; cd "$B/pair-$name"
    "$D" campaign --seconds="$seconds" --workers="$workers" --seed=11 $flags \
      --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$B/pair-$name.log" 2>&1
  done
  touch "$B/pair.done"' pair "$seconds" "$workers" "$B" "$D" "$SRC" "$@" </dev/null >"$B/pair.out" 2>&1 &
echo "detached: $*"
