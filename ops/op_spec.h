// One declarative entry per op: its ATen name and overload, the shape rule the
// generator and type inference share, the dtypes it runs with on both CPU and
// CUDA, and a hint for which input values are inside its domain.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/dtype.h"

namespace divfuzz::ops {

// How outputs follow from inputs. The generator and inference are generic
// over these; no code outside the catalogue names an op.
enum class Rule {
  kUnary,             // f(x): same shape and dtype
  kUnaryScalar,       // f(x, scalar): same shape and dtype
  kBinary,            // f(x, y): broadcast, promoted dtype
  kCompare,           // f(x, y): broadcast, bool
  kReduceAll,         // f(x): 0-d; integer sums become i64
  kReduceDims,        // f(x, dim=[...], keepdim=): reduced dims
  kReduceOneDim,      // f(x, dim, keepdim): one dim
  kDimwise,           // f(x, dim): same shape (softmax, scans)
  kMm,                // [m,k] x [k,n]
  kBmm,               // [b,m,k] x [b,k,n]
  kMatmul,            // torch.matmul's broadcasting rules
  kLinear,            // x[...,k], w[n,k], b[n] -> [...,n]
  kSquareToBatch,     // [...,n,n] -> [...]   (det, logdet)
  kSquareToTwoBatch,  // [...,n,n] -> ([...], [...])   (slogdet)
  kSquare,            // [...,n,n] -> [...,n,n]  (inverse, cholesky, matrix_exp)
  kSquareToVector,    // [...,n,n] -> [...,n]  (eigvalsh)
  kSolve,             // A[...,n,n], B[...,n,k] -> [...,n,k]
  kTranspose2d,       // t(): [m,n] -> [n,m]
  kTrace,             // [m,n] -> []
  kSquareWithInfo,    // [...,n,n] -> ([...,n,n], info i32 [...])  (*_ex factorizations)
  kArgReduce,         // (x, dim, keepdim) -> i64 indices
  kValuesIndices,     // (x, dim, keepdim) -> (values, i64 indices)  (max.dim, median.dim, mode)
  kSort,              // (x, dim, descending=) -> (values, i64 indices), same shape
  kTopk,              // (x, k, dim, largest=) -> (values, i64 indices), dim of size k
  kCast,              // (x, dtype) -> same shape, that dtype
  kQr,                // [...,m,n] -> (Q [...,m,k], R [...,k,n]), k = min(m,n)
  kSvd,               // [...,m,n] -> (U [...,m,k], S [...,k], Vh [...,k,n]), full_matrices=False
  kEigh,              // [...,n,n] -> (w [...,n], V [...,n,n])
  kEig,               // [...,n,n] -> (w complex [...,n], V complex [...,n,n])
  kLu,                // [...,m,n] -> (P [...,m,m], L [...,m,k], U [...,k,n])
  kGeneric,           // schema-driven: arguments from the schema, types from the Meta device
};

// What the oracle's expected-by-policy rules need to know about an op.
enum Hint : uint64_t {
  kHintNone = 0,
  kInfoGated = 1 << 0,            // outputs are valid only where the last (info) output is 0
  kIndicesOutput = 1 << 1,        // result 1 holds indices along dim; ties make them free
  kConditioned = 1 << 2,          // accuracy bounded by the condition number of input 0
  kCancellingReduction = 1 << 3,  // a sum over dims (sum, mean, cumsum ...)
  kCancellingMatmul = 1 << 4,     // dot products (mm, matmul, linear ...)
  kDecomposition = 1 << 5,        // factors are free up to sign/phase: compare invariants
  kTf32Sensitive = 1 << 6,        // CUDA may use TF32 / reduced-precision reductions
  kProductReduction = 1 << 7,     // a product over dims (prod, cumprod): order decides
                                  // intermediate over/underflow and rounding
  kIndicesFirst = 1 << 8,         // with kIndicesOutput: result 0 holds them (argsort)
  // Kernel classes (ops/kernel_classes.cc attaches them by what a kernel does,
  // to curated and generic entries alike; the oracle's rules key on them).
  kSumsInside = 1 << 9,         // sums terms inside (conv, pooling, norms, trapezoid, inner,
                                // losses, statistics): the summation-order bound holds
  kTransform = 1 << 10,         // a fast transform (FFT): its error is normwise,
                                // c log2(N) eps ||X||_2, not per element
  kScanCarry = 1 << 11,         // carries a running value in the dtype (logcumsumexp):
                                // position k may be off by about k eps
  kNoNonFiniteGuarantee = 1 << 12,  // linalg, FFT, reductions: PyTorch gives no guarantee
                                    // for non-finite inputs, in any failure class
  kReferenceIsCpuKernel = 1 << 13,  // the float64 reference runs the CPU's own algorithm
                                    // (MKL/pocketfft FFTs): it cannot judge the CPU against CUDA
  kSquaresInside = 1 << 14,     // squares or multiplies inputs inside (var, std, norms,
                                // distances, complex mul/div): an intermediate may overflow
                                // the accumulate dtype though the result fits
  kInternalIntCast = 1 << 15,   // casts a float argument to int64 inside (the orthogonal
                                // polynomials' n): undefined for non-finite or huge values
  kNormalizes = 1 << 16,        // normalizes by statistics it computes (batch/layer/group
                                // norm): their rounding is amplified by 1/sigma
  kInexactInLowPrecision = 1 << 17,  // documented as inexact in f16/bf16 (round(decimals=))
  kComplexSquares = 1 << 18,    // complex multiplication/division: the parts' squares and
                                // cross products may overflow though the result fits
  kValueTies = 1 << 19,         // its value output may be any of several equally valid
                                // values (mode: any most frequent value)
  kReducesDim = 1 << 20,        // with kIndicesOutput: the outputs drop the dim the op
                                // selects along unless keepdim (kthvalue)
  kNanOnlyFromDegreeOne = 1 << 21,  // NaN x gives NaN only for degree n >= 1 (the orthogonal
                                    // polynomials: P_0 = 1 whatever x)
  kCorrectlyRounded = 1 << 22,  // IEEE 754 requires the correctly rounded result (add, sub,
                                // mul, div, sqrt, fmod, remainder): no ulp of slack
  kNormwiseSpectrum = 1 << 23,  // singular values / symmetric eigenvalues: perturbation
                                // bounded by ||E||_2 (Weyl), so the error is normwise
  kPrefixSums = 1 << 24,        // with kSumsInside: output k sums the terms up to k along
                                // dim_pos (cumulative_trapezoid)
  kMatrixFunction = 1 << 25,    // a matrix function by scaling and squaring (matrix_exp):
                                // its error is normwise, about ||A|| eps ||f(A)|| (Higham)
  kSelectsInputs = 1 << 26,     // its values are input elements it selects (sort, topk,
                                // median, max.dim, max_pool): at ties its backward may
                                // route each gradient to any tied position
  kPolesAtNonPositiveIntegers = 1 << 27,  // input `self` has poles at 0, -1, -2 ... (polygamma)
  kPointwise = 1 << 28,         // output element i depends only on input element i (after
                                // broadcasting): value variants may stack along a new
                                // leading dim (mutators/value_variants.h)
  kBatchesLeadingDims = 1 << 29,  // computes each matrix of its leading (batch) dims on its
                                  // own (linear algebra): value variants may stack in front
  kSpacingDifferences = 1u << 30,  // with kSumsInside: argument `x` holds sample points
                                   // whose differences scale the terms (trapezoid's x)
  kMultipliesInputs = 1u << 31,  // multiplies two of its inputs inside without summing them
                                 // (addr's vec1[i]·vec2[j]): that product may overflow the
                                 // dtype though the result is defined
  kBinning = 1ull << 33,        // counts x into bins by (x - min)·bins/(max - min) computed in
                                // the dtype (histc): an x at an edge may land either side
                                // (it shared kSelectsInputs' bit until session 45)
  kComputesInOpmath = 1ull << 32,  // computes in its opmath dtype (float32 for f16/bf16),
                                   // statistics and backward included, and rounds once at
                                   // the end (rms_norm's composite upcasts its input)
  kCrossTerms = 1ull << 35,  // with kSumsInside: a cross product, each component
                             // a_j·b_k - a_k·b_j, whose terms are |a_j·b_k| + |a_k·b_j|
                             // (the op on |inputs| cancels them to 0 for a × a)
  kDistanceTerms = 1ull << 34,  // with kSumsInside: a loss of row distances (triplet_margin_loss:
                                // margin + d(a, p) - d(a, n)), whose terms are the margin and
                                // the distances, not the op on |inputs|
};

// The CUDA kernel classes whose library process-wide switches choose
// (exec/cuda_variants.def names the classes each switch changes):
// ops/kernel_classes.cc attaches them by name. An op with none runs the same
// CUDA kernel under every variant.
enum CudaKernel : uint32_t {
  kCudaKernelNone = 0,
  kCudaSolver = 1 << 0,     // factorizations, solves, inverses, eigen/singular values:
                            // cuSOLVER or MAGMA (setLinalgPreferredBackend)
  kCudaBlas = 1 << 1,       // matrix products: cuBLAS or cuBLASLt (setBlasPreferredBackend),
                            // TF32 tensor cores (setAllowTF32CuBLAS)
  kCudaDnn = 1 << 2,        // convolutions, batch norm, RNNs: cuDNN or ATen's own kernels
                            // (setUserEnabledCuDNN), its autotuner and deterministic mode
  kCudaAttention = 1 << 3,  // scaled_dot_product_attention: flash, memory-efficient,
                            // math or cuDNN (setSDPUse*)
  kCudaAtomics = 1 << 4,    // adds with atomics in arrival order unless deterministic
                            // algorithms are on (index_add, scatter_add, index_put)
};

// Preconditions PyTorch does not check, so inputs that break them read out of
// bounds: exec/index_precheck.cc checks them before the op runs.
enum class UncheckedPrecondition {
  kNone,
  kCtcLabelsInClasses,     // ctc_loss: every target label < the number of classes
  kWeightCoversKernel,     // slow_conv3d/_transpose: the weight is as large as the kernel
  kSourceOfTheSameDType,   // set_: the source storage has the tensor's dtype
  // Loops bounded only by a value. Such a node runs for minutes (and on CUDA
  // holds the GPU every worker shares: on an H100 it cut a campaign to a
  // tenth), and PyTorch's rules already leave it undefined or expected:
  kBoundedDegree,          // the orthogonal polynomials loop n times (n cast to int64)
  kFiniteMatrixNorm,       // matrix_exp: squarings from log2 of the norm (an int cast)
  kFiniteInput,            // the SVD's and QR's iterations on CUDA do not end on NaN/inf
                           // (on the campaign's MPS server a hang killed by the timeout
                           // reached every worker); LAPACK's geev (eig, eigvals)
                           // segfaults on the CPU, and the dying worker's crash handler
                           // wedged for 50 s on a 2-core host
  kKeyValueSameLength,     // scaled_dot_product_attention: the CPU's flash attention takes
                           // the sequence length from value and reads (and in the backward
                           // writes) past a shorter key: heap corruption (PR #193728);
                           // and it divides by the head count: SIGFPE at 0 heads (#141219)
};

// Where inputs should lie for the op to be interesting rather than NaN.
enum class Domain {
  kAny,
  kPositive,    // log, sqrt
  kUnit,        // asin, atanh, erfinv: (-1, 1)
  kAtLeastOne,  // acosh
  kSpd,         // cholesky: symmetric positive definite
};

using DTypeMask = uint32_t;
constexpr DTypeMask Mask(graph::DType d) { return 1u << static_cast<int>(d); }
constexpr DTypeMask Mask(std::initializer_list<graph::DType> ds) {
  DTypeMask m = 0;
  for (auto d : ds) m |= Mask(d);
  return m;
}
inline bool Has(DTypeMask m, graph::DType d) { return (m & Mask(d)) != 0; }

// An argument whose accepted values PyTorch documents per device (lstsq's and
// svd's driver). The generator draws the values of both devices; a side that
// raises on a value its device does not take is expected (device_argument).
struct DeviceArgument {
  absl::string_view name;
  absl::string_view cpu;   // the values the CPU takes, comma-separated ("": only None)
  absl::string_view cuda;  // the values CUDA takes
  absl::string_view why;
};

// How a decomposition's outputs are compared (kDecomposition): through its
// invariants, since its factors are free up to sign or phase
// (oracles/invariants.cc and both repro harnesses).
enum class Decomposition {
  kNone,
  kQr,    // (Q, R): Q R = A and |diag(R)|
  kSvd,   // (U, S, Vh): U diag(S) Vh = A and S
  kSvdV,  // (U, S, V), torch.svd: U[.., :k] diag(S) V[.., :k]^H = A and S
  kEigh,  // (w, V): V diag(w) V^H and w
  kLu,    // (P, L, U): P L U = A
  kEig,   // (w, V): w as a multiset
};

// The outputs of a decomposition that are not unique (bit i: output i):
// factors free up to sign or phase, pivots chosen among ties, a spectrum in
// no particular order. Correct kernels may give different values there, and
// so may anything computed from them.
constexpr uint32_t FreeOutputs(Decomposition d) {
  switch (d) {
    case Decomposition::kQr:
      return 0b11;  // signs of Q's columns and R's rows
    case Decomposition::kSvd:
    case Decomposition::kSvdV:
      return 0b101;  // U and V (S is unique)
    case Decomposition::kEigh:
      return 0b10;  // V (w is unique, ascending)
    case Decomposition::kLu:
      return 0b111;  // pivots among ties
    case Decomposition::kEig:
      return 0b11;  // order, and V's phases
    case Decomposition::kNone:
      return 0;
  }
  return 0;
}

// Which input's condition number bounds a linear-algebra op (kConditioned),
// and how the op reads it: whole, one triangle, or as a Cholesky factor L of
// the system L L^T (cholesky_solve). `upper_pos` is where the op's `upper`
// argument sits (-1: keyword-only), `upper_default` its default.
enum class ConditionedAs { kWhole, kTriangle, kCholeskyFactor };
struct ConditionedMatrix {
  int arg = 0;
  ConditionedAs as = ConditionedAs::kWhole;
  int upper_pos = -1;
  bool upper_default = false;
};

struct GenericOp;

struct OpSpec {
  absl::string_view name;      // "aten::add"
  absl::string_view overload;  // "Scalar"; empty for the default overload
  Rule rule;
  DTypeMask dtypes;
  // Dtypes some device accepts and another rejects (a dtype gap, a one-sided
  // error): replay takes them; generation picks them at kOneSidedShare.
  DTypeMask one_sided_dtypes = 0;
  Domain domain = Domain::kAny;
  absl::string_view family;  // "exp_log", "trig", "linalg", ... for reports
  // kUnaryScalar: the range the scalar argument is drawn from.
  double scalar_low = -2, scalar_high = 2;
  // Policy hints (read by the oracle).
  bool integer_sum_widens = false;  // sum/prod/cumsum of ints give i64
  uint64_t hints = kHintNone;
  uint32_t cuda_kernels = kCudaKernelNone;  // CudaKernel bits
  // Positions of dim and keepdim in the schema (-1: keyword-only).
  int dim_pos = 1;
  int keepdim_pos = 2;
  // kGeneric: the schema and learned forms (ops/generic.h).
  const GenericOp* generic = nullptr;
  // The exact reference (exec/exact_reference.h), like OpInfo's `ref`: the
  // name of a correctly rounded MPFR or exact-rational evaluation of the op,
  // or empty when it has none.
  absl::string_view exact;
  // The exact backward (exec::RunExactVjp) with respect to the first input,
  // where PyTorch's float64 backward shares a formula that rounds (an
  // unshifted log-sum-exp): the gradient oracle's exact witness.
  absl::string_view exact_vjp;
  // Outputs whose contents PyTorch leaves to each device (bit i: result i),
  // e.g. log_sigmoid_forward's buffer: never compared.
  uint32_t device_defined_outputs = 0;
  // With kInternalIntCast: the argument position that is cast to int64.
  int int_cast_arg = -1;
  UncheckedPrecondition unchecked = UncheckedPrecondition::kNone;
  // With kDecomposition: the form of its outputs (ops/kernel_classes.cc).
  Decomposition decomposition = Decomposition::kNone;
  const DeviceArgument* device_argument = nullptr;
  ConditionedMatrix conditioned;
  // A constant the kernel multiplies an input by on the way to a result that
  // may be much smaller (hardswish's x·relu6(x + 3) is 6·x, sinc's sin(πx)/(πx)
  // takes π·x): beyond max/scale the intermediate overflows though the result
  // fits. 0: none. With `inside_scale_pow10_arg` >= 0 the constant is
  // 10^d for the integer argument d there (round(decimals=d): x·10^d).
  double inside_scale = 0;
  int inside_scale_pow10_arg = -1;
  // A p-norm's order p at this argument position (renorm, norm, dist, cdist,
  // pdist, linalg_vector_norm): the op sums |x|^p, which may overflow the
  // accumulate dtype for p > 2 though the norm fits. -1: none.
  int norm_order_arg = -1;
  // Sampling coordinates (grid_sampler's grid, in [-1, 1]) at `arg`, which
  // the kernel unnormalizes by the input's spatial size, and the positions of
  // the interpolation and padding modes (ops/kernel_classes.cc). arg < 0: none.
  struct Grid {
    int arg = -1;
    int mode_arg = -1;
    int padding_arg = -1;
  } grid;
  // An oscillatory kernel that forms its phase in the dtype: phase =
  // scale·|v|^power for the argument v at position `arg` (-1: none); its
  // amplitude is at least amplitude·|v|^amplitude_power. The orthogonal
  // polynomials' (n + 1/2)·acos(x), Bessel functions' x - k·pi/4, Airy's
  // (2/3)|x|^1.5: a rounding of eps·phase moves the result by that times the
  // amplitude, and a phase beyond the dtype's range gives NaN.
  // A documented domain outside which the behaviour is undefined: input 0
  // must exceed scale·arg + offset for the int argument at `arg` (mvlgamma:
  // x > (p - 1)/2). arg < 0: none.
  struct DocumentedDomain {
    int arg = -1;
    double scale = 0, offset = 0;
  } documented_domain;
  // An argument whose default (None) depends on the input's dtype
  // (matrix_rank's and pinv's rtol =
  // eps·max(m, n), lstsq's rcond): upcast, the call means another thing.
  absl::string_view dtype_default_arg;
  // An argument whose None means the epsilon of the input's opmath dtype
  // (rms_norm's eps): the float64 targets pass that value explicitly.
  absl::string_view opmath_eps_arg;
  // A Scalar argument (position and schema name) the backward formula
  // derives another Scalar from and hands to a kernel that rounds it to the
  // dtype (pow's grad·exp·self.pow(exp - 1): 0.79 read as a float32); pos -1
  // for none.
  struct DerivedScalar {
    int pos = -1;
    absl::string_view name;
  } derived_scalar;
  struct Phase {
    int arg = -1;
    double scale = 1, power = 1, amplitude = 0, amplitude_power = 0;
  } phase;

  std::string Qualified() const;  // "aten::add.Scalar"
};

// Linear algebra: its kernels hand an input's storage to LAPACK, cuSOLVER or
// MAGMA when its layout suits them, and must copy it first if the routine
// overwrites it. The executor and both repro harnesses check that such an op
// leaves its inputs as they were (CUDA's linalg_eigvals overwrote a
// column-major input, QR's Q, with its Schur form on the H100, and the next
// op that read Q diverged with nothing to show why).
inline bool GuardsItsInputs(const OpSpec& spec) {
  return spec.family == "linalg" || spec.family == "decomposition" ||
         (spec.hints & (kDecomposition | kConditioned | kInfoGated)) != 0;
}

}  // namespace divfuzz::ops
