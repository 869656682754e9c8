#!/usr/bin/env bash
# Issue 33's GPU-host measurements: which CUDA switches change which ops, and a
# campaign whose workers rotate over the switches (--cuda_variants). Run from
# the repository root on the GPU host; results go to $OUT as they come (a
# device command that runs out of time still returns what is there).
#
# The binary: $DIVFUZZ, else build-carry/divfuzz with its libraries in
# build-carry/lib (a clang build of this branch, as build-carry/run.sh uses).
#
#   bash scripts/gpu/variants.sh ops                # divfuzz ops --cuda_variants=all (text, JSON)
#   bash scripts/gpu/variants.sh campaign SECONDS [WORKERS] [SETS]
#        # a campaign rotating the CUDA side over SETS (default: every switch
#        # but tf32, and the defaults), WORKERS workers (default: one per set,
#        # at most 12); buckets per variant and tier, the ablations' verdicts
#   bash scripts/gpu/variants.sh all [SECONDS]      # ops, then a campaign (default 180 s)
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
C=$ROOT/build-carry
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=$C/lib:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
D=${DIVFUZZ:-}
if [ -z "$D" ]; then
  D=/tmp/df-variants/divfuzz
  mkdir -p /tmp/df-variants && cp -f "$C/divfuzz" "$D" && chmod +x "$D"
fi
SETS_DEFAULT=default,magma,cusolver,cublas,cublaslt,nocudnn,cudnn_benchmark,deterministic,sdpa_flash,sdpa_efficient,sdpa_math,sdpa_cudnn

ops_step() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
  "$D" help targets > "$OUT/targets.txt" 2>&1
  timeout -s KILL 420 "$D" ops --cuda_variants=all --probe_timeout=20 --json > "$OUT/ops-variants.jsonl" 2> "$OUT/ops-variants.err"
  echo "ops --cuda_variants=all rc=$? (stderr: $OUT/ops-variants.err)"
  # The table: ops some switch changes, raises under, or that differ run to run.
  python3 - "$OUT/ops-variants.jsonl" <<'PY' | tee "$OUT/ops-variants.txt"
import collections, json, sys
rows = []
for line in open(sys.argv[1]):  # one op a line, as measured
    try:
        rows.append(json.loads(line))
    except ValueError:
        pass
count = collections.Counter()
print('%-44s %-5s %-22s %-40s %s' % ('op', 'dtype', 'declared', 'changed by (bitwise)', 'raises under'))
for r in rows:
    count.update(r['changed'])
    if r['changed'] or r['raises'] or r['status']:
        print('%-44s %-5s %-22s %-40s %s' % (r['op'], r['dtype'], r['declared'],
              r['status'] or ','.join(r['changed']), ','.join(r['raises'])))
print('%d ops measured; ops each switch changes: %s' % (len(rows), dict(count)))
PY
  # Switches that change an op whose catalogue entry does not declare them.
  python3 - "$OUT/ops-variants.jsonl" <<'PY' | tee "$OUT/ops-variants-undeclared.txt"
import json, sys
groups = {'magma': 'solver', 'cusolver': 'solver', 'cublas': 'blas', 'cublaslt': 'blas',
          'nocudnn': 'cudnn', 'cudnn_benchmark': 'cudnn', 'deterministic': 'cudnn atomics',
          'tf32': 'blas cudnn', 'sdpa_flash': 'attention', 'sdpa_efficient': 'attention',
          'sdpa_math': 'attention', 'sdpa_cudnn': 'attention'}
rows = []
for line in open(sys.argv[1]):
    try:
        rows.append(json.loads(line))
    except ValueError:  # a line cut short by the timeout
        pass
print('ops changed by a switch their catalogue entry does not declare:')
for r in rows:
    miss = [v for v in r['changed'] if not any(k in r['declared'] for k in groups[v].split())]
    if miss:
        print('  %-44s %-5s declared: %-20s changed by: %s' % (r['op'], r['dtype'], r['declared'], ','.join(miss)))
PY
}

campaign_step() {
  local secs=$1 sets=${3:-$SETS_DEFAULT}
  local n; n=$(echo "$sets" | tr ',' '\n' | wc -l)
  local workers=${2:-$(( n > 12 ? 12 : n ))}
  local W=/tmp/run-variants
  rm -rf "$W"; mkdir -p "$W"; cd "$W" || exit 1
  ( while sleep 60; do tar czf "$OUT/variants-partial.tgz" findings/index.jsonl campaign/stats.csv 2>/dev/null; done ) &
  local snap=$!
  timeout -s KILL $((secs + 120)) "$D" campaign --seconds="$secs" --workers="$workers" \
    --targets=cpu,cuda --cuda_variants="$sets" --seed=33 \
    --corpus="$ROOT/corpus/seed,$ROOT/corpus/families" > "$OUT/variants-campaign.log" 2>&1
  echo "campaign rc=$?"
  kill $snap 2>/dev/null
  # Buckets per variant (the targets of the bucket's first hit) and tier, and
  # what each ablation pinned.
  python3 - <<'PY' | tee "$OUT/variants-summary.txt"
import collections, json, os
by = collections.Counter()
abl = []
for l in open('findings/index.jsonl'):
    e = json.loads(l)
    side = e.get('targets', '?').split(' vs ')[-1]
    by[(side, e.get('tier', '?'))] += 1
    p = os.path.join('findings', e['id'], 'ablation.json')
    if os.path.exists(p):
        a = json.load(open(p))
        abl.append((e['id'], e.get('tier'), a.get('summary', '')))
print('buckets per CUDA side and tier:')
for (side, tier), n in sorted(by.items()):
    print('  %-28s %-12s %d' % (side, tier, n))
print('ablations (%d):' % len(abl))
for i, tier, s in abl:
    print('  %s [%s]: %s' % (i, tier, s))
PY
  local sel
  sel=$(python3 -c "
import json
for l in open('findings/index.jsonl'):
    e = json.loads(l)
    if e.get('tier') in ('bug', 'divergence'): print('findings/' + e['id'])
")
  tar czf "$OUT/variants.tgz" findings/index.jsonl campaign/campaign.json campaign/stats.csv \
    $(for d in $sel; do ls $d/*.dfz $d/report.md $d/ablation.json $d/repro.py 2>/dev/null; done) 2>/dev/null
  grep -a -A40 'campaign summary' "$OUT/variants-campaign.log" | head -60
}

step=${1:-}; shift || true
case "$step" in
  ops) ops_step ;;
  campaign) campaign_step "$@" ;;
  all) ops_step; campaign_step "${1:-180}" ;;
  *) echo "usage: $0 ops | campaign SECONDS [WORKERS] [SETS] | all [SECONDS]" >&2; exit 2 ;;
esac
