#!/usr/bin/env bash
# The GPU-host measurements the issues ask for, in steps that each fit one
# 10-minute device command (run from the repository root; source
# .gpu-deps/env.sh first; logs and results go to $OUT, default ./gpu-out).
# The source built is build-src/ when present (a `git archive HEAD` export
# carried to the host), else the working tree.
#
#   bash scripts/gpu/check.sh build                   # g++ + libFuzzer archive, build-gpu/bin
#   bash scripts/gpu/check.sh campaign SECONDS KILL_AT [WORKERS]
#        # a campaign of SECONDS in build-gpu/$RUN (default run; $SEED: its seed), killed with kill -9 at KILL_AT s,
#        # then resumed in the same call for the rest (KILL_AT >= SECONDS: no kill)
#   bash scripts/gpu/check.sh resume LIMIT            # continue it for at most LIMIT s
#   bash scripts/gpu/check.sh verify                  # minimize leftovers, run every repro
#   bash scripts/gpu/check.sh probe [N]               # divfuzz ops --probe=N on cpu and cuda
#   bash scripts/gpu/check.sh learn [LIMIT]           # relearn ops/generic_table.txt, rebuild
#   bash scripts/gpu/check.sh sweep SECONDS W...      # a campaign of SECONDS per worker count W:
#        # programs/s and buckets per tier of each (the workers-per-GPU choice);
#        # SWEEP_FLAGS adds campaign flags, SWEEP_TAG names the arm in the logs
#   bash scripts/gpu/check.sh feedback on|off SECONDS # one arm of the feedback benchmark
#   bash scripts/gpu/check.sh feedback both SECONDS   # both arms at once (same load on each)
#   bash scripts/gpu/check.sh seed                    # replay the seed case and write its repro
#   bash scripts/gpu/check.sh detach STEP ARGS... [-- STEP ARGS...]...
#        # run the steps one after another in a new process session, so they
#        # outlive this device call (logs in build-gpu/$PIPE, default out;
#        # "done" there when finished; several pipelines need distinct PIPEs)
#   bash scripts/gpu/check.sh watch LIMIT             # wait for the detached runs (at most LIMIT s),
#        # print its progress, copy its results to $OUT
set -euo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
ROOT=$PWD
SRC=$ROOT; [ -d "$ROOT/build-src" ] && SRC=$ROOT/build-src
export B=${B:-$ROOT/build-gpu}
export PIPE=${PIPE:-out}  # detach: the folder under $B for this pipeline's logs
export RUN=${RUN:-run}    # campaign: its folder under $B (two at once need distinct RUNs, SEEDs)
D=${DIVFUZZ:-$B/bin/fuzz/divfuzz}
SELF=$(readlink -f "$0")
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
    rm -rf "$B/$RUN"; mkdir -p "$B/$RUN"; cd "$B/$RUN"
    timeout -s KILL "$kill_at" "$D" campaign --seconds="$seconds" --workers="$workers" ${SEED:+--seed=$SEED} \
      --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$OUT/campaign-1.log" 2>&1 || true
    if [ "$kill_at" -lt "$seconds" ]; then
      sleep 1
      pgrep -f "ru[n]/campaign/corpus" && echo "ORPHAN WORKERS" || echo "no orphan workers"
      "$D" campaign --resume=campaign >"$OUT/campaign-2.log" 2>&1
    fi
    grep -v '^\[' "$OUT"/campaign-*.log | grep -v 'NEW finding' | tail -60 ;;
  resume)
    cd "$B/$RUN"; timeout -s KILL "$1" "$D" campaign --resume=campaign >>"$OUT/campaign-3.log" 2>&1 || true
    tail -40 "$OUT/campaign-3.log" ;;
  verify)
    cd "$B/$RUN"
    todo() {
      python3 -c "
import json, sys
for l in open('findings/index.jsonl'):
    e = json.loads(l)
    if not e.get('minimized') and (e['class'] in ('crash', 'hang')) == (sys.argv[1] == 'failing'):
        print('findings/' + e['id'])
" "${1:-}"
    }
    todo failing >failing.txt
    todo >todo.txt
    echo "not yet minimized: $(wc -l <todo.txt), and $(wc -l <failing.txt) hang/crash buckets"
    # Batches of 8 per process: libtorch and CUDA start once per batch. A
    # batch that a crashing candidate ended leaves buckets behind: those go
    # again, one per process.
    # xargs stops launching (and stops waiting) once a command dies by a
    # signal: the wrapper turns a crash into an exit status, and says so.
    repro='"$0" repro --max_seconds=15 "$@" || echo "verify: divfuzz repro exited $? on $*"'
    # Hang and crash buckets restart a process per kept candidate: one per
    # process, beside the others.
    xargs -P 4 -n 1 sh -c "$repro" "$D" <failing.txt >"$OUT/repro-failing.log" 2>&1 &
    failing=$!
    xargs -P 8 -n 8 sh -c "$repro" "$D" <todo.txt >"$OUT/repro-pass.log" 2>&1 || true
    todo >todo2.txt
    echo "still not minimized: $(wc -l <todo2.txt); again one per process"
    xargs -P 8 -n 1 sh -c "$repro" "$D" <todo2.txt >>"$OUT/repro-pass.log" 2>&1 || true
    wait $failing || true
    todo >todo3.txt
    todo failing >failing3.txt
    echo "left unminimized: $(wc -l <todo3.txt), and $(wc -l <failing3.txt) hang/crash buckets"
    python3 "$SRC/scripts/verify_repros.py" findings --work campaign --jobs 16 \
      --json "$OUT/verify.json" >"$OUT/verify.log" 2>&1 || true
    grep -A12 '== summary' "$OUT/verify.log"
    cp campaign/report.html campaign/stats.csv "$OUT/" ;;
  learn)
    # Relearn ops/generic_table.txt on this host's targets (per-device
    # acceptance), keep a copy in $OUT, and rebuild with it.
    (cd "$SRC" && time DIVFUZZ=$D bash scripts/learn_ops.sh "$(nproc)" 3 "${1:-400}") >"$OUT/learn.log" 2>&1
    tail -5 "$OUT/learn.log"
    cp "$SRC/ops/generic_table.txt" "$OUT/generic_table.txt"
    ninja -C "$B/bin" fuzz/divfuzz >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; } ;;
  probe)
    "$D" ops --probe="${1:-50}" --op_stats="$OUT/op_stats.json" >"$OUT/ops-probe.txt" 2>&1
    tail -30 "$OUT/ops-probe.txt" ;;
  sweep)
    seconds=$1; shift
    for w in "$@"; do
      arm=sweep${SWEEP_TAG:+-$SWEEP_TAG}-$w
      rm -rf "$B/$arm"; mkdir -p "$B/$arm"; cd "$B/$arm"
      # shellcheck disable=SC2086  # SWEEP_FLAGS is a list of flags
      "$D" campaign --seconds="$seconds" --workers="$w" ${SEED:+--seed=$SEED} ${SWEEP_FLAGS:-} \
        --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$OUT/$arm.log" 2>&1 || true
      echo "== $arm: $w worker(s) ${SWEEP_FLAGS:-}"
      grep -a -A3 'campaign summary' "$OUT/$arm.log" | tail -3
      grep -a 'exec/s per worker' "$OUT/$arm.log" || true
      grep -a '^divfuzz campaign: MPS' "$OUT/$arm.log" || true
      # The end of each dead worker's log: why it died.
      for log in $(grep -ao 'died: .*(log: [^)]*)' "$OUT/$arm.log" | sed 's/.*(log: \(.*\))/\1/'); do
        echo "== $log"; grep -av 'Warning\|^#\|NEW finding' "$log" | tail -25
      done >"$OUT/$arm-deaths.txt" 2>&1
      grep -c '^== ' "$OUT/$arm-deaths.txt" | sed 's/^/dead workers: /'
    done ;;
  feedback)
    arm=$1 seconds=$2
    if [ "$arm" = both ]; then
      bash "$SELF" feedback on "$seconds" & bash "$SELF" feedback off "$seconds" & wait
      exit 0
    fi
    rm -rf "$B/fb-$arm"; mkdir -p "$B/fb-$arm"; cd "$B/fb-$arm"
    "$D" campaign --seconds="$seconds" --seed=1 --feedback=$([ "$arm" = on ] && echo true || echo false) \
      --repro_seconds=0 --corpus="$SRC/corpus/seed,$SRC/corpus/families" >"$OUT/feedback-$arm.log" 2>&1
    grep -A6 'campaign summary' "$OUT/feedback-$arm.log" ;;
  seed)
    mkdir -p "$B/seed"
    "$D" replay "$SRC/corpus/seed/seed_case_logdet.dfz" >"$OUT/seed-replay.log" 2>&1 || true
    "$D" repro "$SRC/corpus/seed/seed_case_logdet.dfz" --out="$B/seed/repro" >"$OUT/seed-repro.log" 2>&1 || true
    cp "$B/seed/repro/min.dfz" "$B/seed/repro/report.md" "$OUT/" 2>/dev/null || true
    tail -5 "$OUT/seed-replay.log"; tail -8 "$OUT/seed-repro.log" ;;
  detach)
    # The device tool ends a call's processes when it returns, except those in a
    # new session: a 20-minute campaign and its verification run on from here.
    P=$B/$PIPE; mkdir -p "$P"; rm -f "$P/done" "$P/steps.log"
    setsid nohup bash -c '
      self=$1; shift; args=(); rc=0
      run() { echo "== $(date +%T) step: $*"; OUT=$B/$PIPE bash "$self" "$@" || echo "== step failed: $?"; }
      for a in "$@"; do
        if [ "$a" = -- ]; then run "${args[@]}"; args=(); else args+=("$a"); fi
      done
      [ ${#args[@]} -gt 0 ] && run "${args[@]}"
      echo "== $(date +%T) all steps done"; touch "$B/$PIPE/done"' detach "$SELF" "$@" \
      >"$P/steps.log" 2>&1 </dev/null &
    echo "detached (pid $!): $*; logs in $P" ;;
  watch)
    limit=$1 start=$SECONDS
    pending() { for d in "$B"/*/steps.log; do [ -e "$(dirname "$d")/done" ] || return 0; done; return 1; }
    while pending && [ $((SECONDS - start)) -lt "$limit" ]; do
      sleep 30
      last=$(cat "$B"/*/campaign-*.log 2>/dev/null | tr '\r' '\n' | grep -a 'execs (' | tail -1 || true)
      echo "$(date +%T) ${last:-(no status yet)}"
    done
    for d in "$B"/*/steps.log; do echo "== $d"; grep -a '^==\|summary\|ORPHAN\|orphan' "$d"; done
    pending && echo "still running" || echo "DETACHED RUNS DONE"
    # At most 8 files come back: the logs and results as one archive.
    # --hard-dereference: a store rewritten while tar reads it once came back
    # with index.jsonl stored as a link to state.json (an inode reused).
    (cd "$B" && tar -czf "$OUT/results.tgz" --hard-dereference --exclude='*/build/*' --exclude='corpus' --exclude='*.so' \
      $(for d in */steps.log; do dirname "$d"; done) \
      $(ls -d run*/findings run*/campaign/report.html run*/campaign/stats.csv run*/campaign/campaign.json \
              run*/campaign/state.json run*/campaign/groups.txt fb-*/campaign/stats.csv fb-*/findings/index.jsonl 2>/dev/null)) || true
    ls -la "$OUT" ;;
  *) sed -n 2,26p "$0"; exit 2 ;;
esac
