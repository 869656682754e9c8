#!/usr/bin/env bash
# The isolated lane on a GPU host (issue 32): declined CUDA linear algebra on
# NaN/inf inputs, run one at a time in a process of its own outside MPS with a
# short timeout. Run from the repository root after `scripts/gpu/check.sh build`
# (or with DIVFUZZ=path/to/divfuzz); results in $OUT (default ./gpu-out/lane).
#
#   bash scripts/gpu/isolated_lane.sh direct     # each program by hand: divfuzz isolated, cpu vs cuda
#   bash scripts/gpu/isolated_lane.sh campaign S # a campaign of S s (8 workers, MPS) seeded with them,
#                                                # --isolated_share=1: the lane's findings, and the
#                                                # workers' rate beside it
set -euo pipefail
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-out}/lane
D=${DIVFUZZ:-$ROOT/build-gpu/bin/fuzz/divfuzz}
T=${TARGETS:-cpu,cuda}  # cpu,cpu-f64: a dry run without a GPU
mkdir -p "$OUT/seeds"
prog() {  # NAME OP ARGS-LINE: one f32 4x4 matrix with a NaN (or inf) into OP
  printf 'divfuzz v1\ninput %%a: f32[4,4] = values(%s)\n%s\noutput %%r\n' "$2" "$3" > "$OUT/seeds/$1.dfz"
}
V_NAN="nan, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0"
V_INF="inf, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0"
prog svdvals_nan "$V_NAN" '%r = aten::linalg_svdvals(%a)'
prog pinv_nan "$V_NAN" '%r = aten::linalg_pinv.atol_rtol_float(%a)'
prog qr_inf "$V_INF" '%q, %r = aten::linalg_qr(%a)'
prog eigvals_nan "$V_NAN" '%r = aten::linalg_eigvals(%a)'
prog matrix_rank_nan "$V_NAN" '%r = aten::linalg_matrix_rank.atol_rtol_float(%a)'
prog matrix_exp_inf "$V_INF" '%r = aten::linalg_matrix_exp(%a)'
case "${1:-}" in
  direct)
    for f in "$OUT"/seeds/*.dfz; do
      n=$(basename "$f" .dfz)
      # What a worker does (declined, exit 3), then the lane's run with a 20 s cap.
      "$D" replay --targets="$T" "$f" > "$OUT/$n.replay.log" 2>&1 || echo "$n replay exit $?"
      start=$SECONDS
      set +e
      timeout -s KILL 20 "$D" isolated --targets="$T" --findings="$OUT/findings-direct" "$f" \
        > "$OUT/$n.isolated.log" 2>&1
      rc=$?
      set -e
      echo "$n: isolated exit $rc ($((SECONDS - start)) s; 137: hung past 20 s)" \
        "$(grep -E '^(VERDICT|RUN)' "$OUT/$n.isolated.log" | tail -1)"
    done
    cat "$OUT/findings-direct/index.jsonl" 2>/dev/null | cut -c1-300 || true
    ;;
  campaign)
    S=${2:-120}
    rm -rf "$OUT/work" "$OUT/findings"
    "$D" campaign --seconds="$S" --workers=8 --targets="$T" --isolated_share=1 \
      --isolated_timeout=5 --corpus="$OUT/seeds,corpus/seed,corpus/families" \
      --work="$OUT/work" --findings="$OUT/findings" 2>&1 | tee "$OUT/campaign.log" | grep -E \
      'isolated lane|restarts|== divfuzz|declined' | tail -40
    grep -h '"isolated_lane":true' "$OUT/findings/index.jsonl" | cut -c1-300 || true
    ;;
  *)
    sed -n 2,10p "$0"
    exit 2
    ;;
esac
