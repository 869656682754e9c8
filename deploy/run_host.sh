#!/usr/bin/env bash
# One host of a many-host divfuzz run (docs/DEPLOY.md): a campaign on this host's GPUs with its own
# findings store and corpus, merged into the shared ones every MERGE_MINUTES and at the end.
# The Slurm array script and the Kubernetes Job both run this; it needs only bash and divfuzz.
#
# Environment (defaults in brackets):
#   DIVFUZZ        the divfuzz binary [divfuzz on PATH]
#   SHARED         a folder every host can write (NFS, Lustre, a ReadWriteMany volume): it gets
#                  findings/ (the merged store), corpus/ (the merged corpus) and hosts/<HOST_ID>/
#   HOST_ID        this host's name in SHARED/hosts/ [hostname]
#   LOCAL          this host's own work folder, on a local disk [/tmp/divfuzz-$HOST_ID]
#   MINUTES        the campaign's budget [60]
#   WORKERS        workers per GPU (8 on a 16-core H100 host) [8]
#   TARGETS        the target pair [divfuzz's default: cpu,cuda with a GPU]
#   MERGE_MINUTES  how often the host's store and corpus are merged into SHARED [15]
#   BASELINE       --baseline for the campaign (known bugs) [none]
#   EXTRA_FLAGS    more campaign flags [none]
set -uo pipefail
DIVFUZZ=${DIVFUZZ:-divfuzz}
: "${SHARED:?set SHARED to a folder all hosts can write}"
HOST_ID=${HOST_ID:-$(hostname)}
LOCAL=${LOCAL:-/tmp/divfuzz-$HOST_ID}
MINUTES=${MINUTES:-60}
WORKERS=${WORKERS:-8}
MERGE_MINUTES=${MERGE_MINUTES:-15}
mkdir -p "$SHARED/findings" "$SHARED/corpus" "$SHARED/hosts/$HOST_ID" "$LOCAL"
log() { echo "[$(date -u +%FT%TZ) $HOST_ID] $*"; }

merge() {
  # Both merges are locked and atomic: hosts may merge at the same time, and one killed
  # mid-merge (a preempted job) is finished by the next.
  "$DIVFUZZ" merge "$SHARED/findings" "$LOCAL/findings" || log "merging the findings failed (exit $?)"
  if [ -d "$LOCAL/campaign/corpus" ]; then
    "$DIVFUZZ" merge ${TARGETS:+--targets=$TARGETS} "$SHARED/corpus" "$LOCAL/campaign/corpus" ||
      log "merging the corpus failed (exit $?)"
  fi
  cp "$LOCAL/campaign/stats.csv" "$SHARED/hosts/$HOST_ID/" 2>/dev/null || true
}

# The shared corpus seeds the campaign (read-only: the campaign writes its own corpus).
seeds="$SHARED/corpus"
for d in corpus/seed corpus/families; do [ -d "$d" ] && seeds="$seeds,$d"; done
args=(campaign --minutes="$MINUTES" --workers="$WORKERS" --work="$LOCAL/campaign"
      --findings="$LOCAL/findings" --corpus="$seeds")
[ -n "${TARGETS:-}" ] && args+=(--targets="$TARGETS")
[ -n "${BASELINE:-}" ] && args+=(--baseline="$BASELINE")
# A host that ran before (a requeued job) resumes its campaign.
if [ -f "$LOCAL/campaign/campaign.json" ]; then
  args=(campaign --resume="$LOCAL/campaign" --minutes="$MINUTES")
fi
# shellcheck disable=SC2086
"$DIVFUZZ" "${args[@]}" ${EXTRA_FLAGS:-} > "$SHARED/hosts/$HOST_ID/campaign.log" 2>&1 &
campaign=$!
log "campaign pid $campaign: ${args[*]}"
trap 'kill -TERM $campaign 2>/dev/null' TERM INT
while kill -0 "$campaign" 2>/dev/null; do
  for _ in $(seq $((MERGE_MINUTES * 6))); do
    kill -0 "$campaign" 2>/dev/null || break
    sleep 10
  done
  kill -0 "$campaign" 2>/dev/null && { log "merging into $SHARED"; merge; }
done
wait "$campaign"; rc=$?
log "campaign exited $rc; final merge"
merge
"$DIVFUZZ" report "$LOCAL/campaign" --findings="$LOCAL/findings" --out="$SHARED/hosts/$HOST_ID/report.html" || true
exit "$rc"
