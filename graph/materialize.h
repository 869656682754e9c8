// An input's elements, computed from its payload. The generators live here
// rather than in torch so that every target and every repro sees the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/program.h"

namespace divfuzz::graph {

// Numel() doubles in row-major order; complex dtypes give 2*Numel(), re and im
// interleaved. Every value is exactly representable in the dtype (see
// RoundToDType), so converting it to the tensor's dtype is exact on any path.
// fill(v) on a complex dtype gives v + 0i. Deterministic for a given payload
// (the normal draws use std::log and std::cos, so bit-identical across hosts
// with the same libm). For an input that ValidateProgram
// rejects the result is unspecified (but the call is safe).
std::vector<double> MaterializePayload(const Input& input);

// The edge values special() draws from for a dtype (complex: of its parts):
// floating: 0, -0, +-smallest subnormal, smallest normal, +-max, max/2, +-inf,
// nan, 1, -1, 0.5, the largest value below 1, 1e-3. Integers: 0, 1, -1 if
// signed, min, max, min+1, max-1. bool: 0, 1.
std::vector<double> EdgeValues(DType dtype);

// The generators added for numerics, one element (complex: one part) at a time
// from one SplitMix64(seed) stream, rounded to the dtype like the rest:
//  limits(seed):  3/4 from LimitValues, else the background (normal; integers
//                 round(4*normal); bool normal rounded, nonzero true).
//  edges(seed):   3/4 from DomainEdgeValues (floating: half of them moved 1 or
//                 2 ulps up or down), else the background.
//  ties(seed, distinct=K): K values drawn first (normal rounded to the dtype;
//                 integers in [-10, 10], u8 [0, 20]), each element one of them.
//  dynamic(seed, decades=E): random sign, |x| = 10^u, u uniform in [-E/2, E/2]
//                 clipped to the dtype's normal range (integers: [0, log10 max]).
//  planted(seed): the background, then for each chunk C of VectorChunks(dtype)
//                 a LimitValues element at a random flat index in the vectorized
//                 body [0, n - n%C) and one in the scalar tail [n - n%C, n).
// Matrix kinds, per matrix of the last two dims [m, n] in batch order; complex
// dtypes get them as real parts. N is a normal matrix drawn row-major.
//  singular:      N, then one line (a row when m < n, a column when m > n,
//                 either when square) := c * (another line rounded to the
//                 dtype), c in {+-1, +-2, +-0.5}: rank < min(m, n) after rounding.
//                 A single line becomes zeros.
//  near_singular: singular, then one element of that line 1-4 ulps off.
//  rank_deficient(rank=K): X[m,K] * Y[K,n] / sqrt(K), X and Y normal.
//  ill_conditioned(cond=C): U * diag(s) * V^T, s_l = C^(-l/(k-1)), k = min(m, n);
//                 U's then V's k columns are drawn normal, column by column, and
//                 orthonormalized (Gram-Schmidt, twice); sums run over l in order.
//  spd:           B * B^T / n + I, B normal (square only).
//  scaled(decades=E): diag(r) * N * diag(c), r and c = 10^(E' (u - 1/2)),
//                 E' = min(E, log10(max) - 1) so entries stay finite.
std::vector<double> LimitValues(DType dtype);  // EdgeValues plus near over/underflow
std::vector<double> DomainEdgeValues(DType dtype);

// Elements per AVX2 vector, AVX512 vector and an unrolled pair of AVX512
// vectors (32, 64 and 128 bytes): where ATen's vectorized CPU loops end and
// their scalar tails begin.
std::vector<int64_t> VectorChunks(DType dtype);

}  // namespace divfuzz::graph
