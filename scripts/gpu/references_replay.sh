#!/usr/bin/env bash
# Replays, on a GPU host, the real CUDA bugs the references (exec/references/)
# were built to decide (issue 32), cpu vs cuda: each prints its verdict line,
# whose wrong side and witness say whether the reference decided.
#   bash scripts/gpu/references_replay.sh [DIVFUZZ]   (default build-gpu/fuzz/divfuzz;
#   TARGETS=cpu,cpu-scalar runs it without a GPU)
# Expected at the commit that added the references: embedding_renorm with p = 3
# and negative rows blamed on cuda, witness exact, in f32 and f64 (before: f64
# undecided, f32 undecided where cuda-f64 vetoed); the others decided by the
# exact witness (witness: exact), never "undecided: ... the kernel under test".
set -u
DIVFUZZ=${1:-build-gpu/fuzz/divfuzz}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
write() { printf 'divfuzz v1\n%s\n' "$2" > "$dir/$1.dfz"; }
for dt in f32 f64; do
  write "embedding_renorm_p3_$dt" "input %w: $dt[3,4] = values(-2.0, -1.5, 0.5, -0.25, 0.1, 0.2, 0.1, 0.0, -3.0, 1.0, -1.0, -0.5)
input %i: i64[3] = values(0, 2, 1)
%y = aten::embedding_renorm(%w, %i, 1.0, 3.0)
output %y"
  # zeta(200, 2) = 2^-200 + ...: 0 in f32 (CUDA's float32 accumulation gave NaN)
  write "zeta_underflow_$dt" "input %x: $dt[3] = values(200.0, 60.0, 400.0)
input %q: $dt[3] = values(2.0, 5.0, 10.0)
%y = aten::special_zeta(%x, %q)
output %y"
  # pytorch#187761: a NaN x with n >= 2 returns an unset variable
  write "chebyshev_nan_$dt" "input %x: $dt[4] = values(0.3, nan, -0.6, nan)
%y = aten::special_chebyshev_polynomial_t.n_scalar(%x, 5.0)
output %y"
  write "legendre_outside_$dt" "input %x: $dt[3] = values(1.7, -1.2, 0.4)
input %n: $dt[3] = values(30.0, 45.0, 200.0)
%y = aten::special_legendre_polynomial_p(%x, %n)
output %y"
  write "renorm_p3_$dt" "input %x: $dt[4,5] = uniform(seed=7, low=-2, high=2)
%y = aten::renorm(%x, 3.0, 0, 1.5)
output %y"
done
for f in "$dir"/*.dfz; do
  echo "== $(basename "$f" .dfz)"
  "$DIVFUZZ" replay "$f" --targets="${TARGETS:-cpu,cuda}" 2>&1 | grep -v "^  \[\|^    "
done
