// The index pre-check that keeps out-of-bounds indices away from CUDA's
// device-side asserts: it must reject exactly what the CPU kernels reject,
// for index-taking ops only, without touching the caller's tensors.
#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include "exec/index_precheck.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz::exec {
namespace {

c10::OperatorHandle Op(const char* name, const char* overload) {
  auto h = c10::Dispatcher::singleton().findSchema({name, overload});
  EXPECT_TRUE(h.has_value()) << name;
  return *h;
}

TEST(IndexPrecheck, RejectsWhatTheCpuCallsOutOfBounds) {
  const at::Tensor self = at::zeros({2});
  const at::Tensor src = at::ones({1});
  torch::jit::Stack bad = {self, int64_t{0}, at::full({1}, 5, at::kLong), src};
  const auto why = IndexRejectedOnCpu(Op("aten::scatter_add", ""), bad);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("out of bounds"), std::string::npos) << *why;
  EXPECT_EQ(why->find('\n'), std::string::npos);

  torch::jit::Stack take = {at::zeros({3}), at::full({2}, -7, at::kLong)};
  EXPECT_TRUE(IndexRejectedOnCpu(Op("aten::take", ""), take).has_value());

  c10::List<std::optional<at::Tensor>> indices;
  indices.push_back(at::full({1}, 9, at::kLong));
  torch::jit::Stack put = {at::zeros({3}), indices, at::ones({1}), false};
  EXPECT_TRUE(IndexRejectedOnCpu(Op("aten::index_put", ""), put).has_value());

  // Seen on the H100: CUDA's max_unpool faulted on indices its CPU kernel rejects.
  torch::jit::Stack unpool = {at::ones({1, 1, 2, 2}), at::full({1, 1, 2, 2}, 99, at::kLong),
                              std::vector<int64_t>{2, 2}};
  EXPECT_TRUE(IndexRejectedOnCpu(Op("aten::max_unpool2d", ""), unpool).has_value());

  // Seen on the H200 (issue 18's campaign), each a CUDA fault that, through
  // the MPS server, reached every worker: a 0-d index past the dim (the CPU
  // says "out of DATA bounds"), and a mask with more ones than the source
  // has elements (masked_scatter takes no index argument).
  torch::jit::Stack select = {at::zeros({1, 1}, at::kLong), int64_t{1},
                              at::full({}, 1, at::kLong)};
  EXPECT_TRUE(IndexRejectedOnCpu(Op("aten::index_select", ""), select).has_value());
  torch::jit::Stack scatter = {at::zeros({}, at::kHalf), at::ones({2}, at::kBool),
                               at::zeros({}, at::kHalf)};
  const auto masked = IndexRejectedOnCpu(Op("aten::masked_scatter", ""), scatter);
  ASSERT_TRUE(masked.has_value());
  EXPECT_NE(masked->find("number of ones in mask"), std::string::npos) << *masked;
  torch::jit::Stack enough = {at::zeros({2}), at::ones({2}, at::kBool), at::ones({2})};
  EXPECT_FALSE(IndexRejectedOnCpu(Op("aten::masked_scatter", ""), enough).has_value());
}

TEST(IndexPrecheck, PassesValidIndicesAndLeavesTheInputsAlone) {
  const at::Tensor self = at::zeros({2});
  torch::jit::Stack ok = {self, int64_t{0}, at::full({1}, 1, at::kLong), at::ones({1})};
  EXPECT_FALSE(IndexRejectedOnCpu(Op("aten::scatter_add_", ""), ok).has_value());
  EXPECT_EQ(self.sum().item<float>(), 0.0f);  // the in-place op ran on a copy
}

TEST(IndexPrecheck, IgnoresOpsWithoutIndexArgumentsAndOtherErrors) {
  // No index-like argument: never run twice, whatever it would do.
  torch::jit::Stack add = {at::ones({2}), at::ones({3}), 1.0};
  EXPECT_FALSE(IndexRejectedOnCpu(Op("aten::add", "Tensor"), add).has_value());
  // An index argument, but the CPU's complaint is not about bounds.
  torch::jit::Stack mismatch = {at::zeros({2}), int64_t{0}, at::zeros({1, 1}, at::kLong),
                                at::ones({1})};
  const auto why = IndexRejectedOnCpu(Op("aten::scatter_add", ""), mismatch);
  EXPECT_FALSE(why.has_value()) << *why;
}

// Seen on the H200: ctc_loss with labels outside [0, C) gave different garbage
// on every run and faulted CUDA; on the CPU a label of 1e10 segfaults.
TEST(IndexPrecheck, DeclinesCtcLossLabelsOutsideTheClasses) {
  const at::Tensor log_probs = at::zeros({5, 2, 4});
  const std::vector<int64_t> input_lengths = {5, 5}, target_lengths = {2, 2};
  auto stack = [&](const at::Tensor& targets) {
    return torch::jit::Stack{log_probs,  targets,    input_lengths, target_lengths,
                             int64_t{0}, int64_t{1}, false};
  };
  const c10::OperatorHandle ctc = Op("aten::ctc_loss", "IntList");
  at::Tensor labels = at::ones({2, 2}, at::kLong);
  EXPECT_FALSE(UncheckedRead(ctc, stack(labels)).has_value());
  labels[0][1] = 4;  // one past the last class
  std::optional<std::string> why = UncheckedRead(ctc, stack(labels));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("[1, 4], outside the classes of log_probs [0, 4)"), std::string::npos)
      << *why;
  labels[0][1] = -1;
  EXPECT_TRUE(UncheckedRead(ctc, stack(labels)).has_value());
  // Float labels are read as integers too.
  EXPECT_TRUE(UncheckedRead(ctc, stack(at::full({2, 2}, 1e10))).has_value());
  EXPECT_FALSE(UncheckedRead(ctc, stack(at::full({2, 2}, 3.0))).has_value());
  // Other ops are never looked at.
  torch::jit::Stack add = {at::ones({2}), at::full({2}, 99.0), 1.0};
  EXPECT_FALSE(UncheckedRead(Op("aten::add", "Tensor"), add).has_value());
}

// Seen on the H200: the reducer shrank a real slow_conv_transpose2d finding
// to a 1x1 weight under kernel_size [2, 2]; the CPU kernel then read past the
// weight and printed garbage that differed between processes.
TEST(IndexPrecheck, DeclinesAConvWeightSmallerThanItsKernel) {
  const c10::OperatorHandle conv = Op("aten::slow_conv_transpose2d", "");
  const std::vector<int64_t> kernel = {2, 2};
  torch::jit::Stack fits = {at::ones({1, 1, 3, 3}), at::zeros({1, 1, 2, 2}), kernel};
  EXPECT_FALSE(UncheckedRead(conv, fits).has_value());
  torch::jit::Stack small = {at::ones({1, 1, 3, 3}), at::zeros({1, 1, 1, 2}), kernel};
  std::optional<std::string> why = UncheckedRead(conv, small);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("weight's spatial shape [1, 2] is smaller than kernel_size [2, 2]"),
            std::string::npos)
      << *why;
  const std::vector<int64_t> kernel3 = {2, 2, 2};
  torch::jit::Stack small3 = {at::ones({1, 1, 2, 2, 2}), at::zeros({1, 1, 1, 1, 1}), kernel3};
  EXPECT_TRUE(UncheckedRead(Op("aten::slow_conv3d", ""), small3).has_value());
  // A weight larger than kernel_size is as unchecked (CUDA memory was
  // corrupted by one on the H100).
  torch::jit::Stack large = {at::ones({2, 2, 5, 6}), at::zeros({2, 2, 5, 6}), kernel};
  std::optional<std::string> large_why = UncheckedRead(conv, large);
  ASSERT_TRUE(large_why.has_value());
  EXPECT_NE(large_why->find("is larger than kernel_size [2, 2]"), std::string::npos) << *large_why;
  // The dilated convolutions check their weight themselves.
  EXPECT_FALSE(UncheckedRead(Op("aten::slow_conv_dilated2d", ""), small).has_value());
}

// Seen on the H200: set.source_Tensor of a float64 self onto a float32
// source read the float32 storage as float64, past its end: 10 buckets of
// garbage that no repro could replay.
// Session 35: the CPU's flash attention with a key of 1 position and a value
// of 4 corrupted the heap (PR #193728); such a call runs in the lane only.
TEST(IndexPrecheck, DeclinesAttentionWithKeyAndValueOfDifferentLengths) {
  const c10::OperatorHandle sdpa = Op("aten::scaled_dot_product_attention", "");
  torch::jit::Stack same = {at::zeros({1, 3, 6, 8}), at::zeros({1, 3, 4, 8}),
                            at::zeros({1, 3, 4, 8})};
  EXPECT_FALSE(UncheckedRead(sdpa, same).has_value());
  torch::jit::Stack other = {at::zeros({1, 3, 6, 8}), at::zeros({1, 3, 1, 8}),
                             at::zeros({1, 3, 4, 8})};
  std::optional<std::string> why = UncheckedRead(sdpa, other);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("key has 1 positions and value 4"), std::string::npos) << *why;
  EXPECT_TRUE(IsolatedLaneRuns(sdpa));
}

// Session 38: q, k and v with no heads (dim -3 of 0) make the CPU's flash
// attention divide by zero (SIGFPE, pytorch#141219): workers died of it in
// the mutator's shape inference, which runs the CPU kernel on stand-ins.
TEST(IndexPrecheck, DeclinesAttentionWithoutHeads) {
  const c10::OperatorHandle sdpa = Op("aten::scaled_dot_product_attention", "");
  torch::jit::Stack none = {at::zeros({1, 0, 4, 8}), at::zeros({1, 0, 4, 8}),
                            at::zeros({1, 0, 4, 8})};
  std::optional<std::string> why = UncheckedRead(sdpa, none);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("query has no heads"), std::string::npos) << *why;
  // No head dim at all (2-d q, k, v) and empty sequences are fine.
  torch::jit::Stack flat = {at::zeros({4, 8}), at::zeros({4, 8}), at::zeros({4, 8})};
  EXPECT_FALSE(UncheckedRead(sdpa, flat).has_value());
  torch::jit::Stack empty_seq = {at::zeros({1, 2, 0, 8}), at::zeros({1, 2, 4, 8}),
                                 at::zeros({1, 2, 4, 8})};
  EXPECT_FALSE(UncheckedRead(sdpa, empty_seq).has_value());
}

TEST(IndexPrecheck, DeclinesSetOntoASourceOfAnotherDType) {
  const c10::OperatorHandle set = Op("aten::set", "source_Tensor");
  torch::jit::Stack same = {at::zeros({}, at::kDouble), at::zeros({3}, at::kDouble)};
  EXPECT_FALSE(UncheckedRead(set, same).has_value());
  torch::jit::Stack other = {at::zeros({}, at::kDouble), at::zeros({3}, at::kFloat)};
  std::optional<std::string> why = UncheckedRead(set, other);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("source is Float, self Double"), std::string::npos) << *why;
  EXPECT_TRUE(UncheckedRead(Op("aten::set_", "source_Tensor"), other).has_value());
  // On cpu-f64 both arrive as float64: the program's dtypes decide, so the
  // reference declines it too (else cpu's refusal is an error split).
  const graph::Program p = testing::MustParse(R"(divfuzz v1
input %s: f64[] = fill(0.0)
input %src: f32[3] = fill(0.0)
%y = aten::set.source_Tensor(%s, %src)
output %y
)");
  const ops::TypeEnv types = {{"s", {graph::DType::kF64, {}}}, {"src", {graph::DType::kF32, {3}}}};
  EXPECT_TRUE(UncheckedRead(set, same, &p.nodes[0], &types).has_value());
}

// Seen on the H100 and H200: a polynomial of degree 2^63, a matrix_exp of
// an infinite norm and an SVD of NaNs each held the shared GPU for minutes
// (a worker's 20 s timeout, then 2 minutes of replays to confirm the hang),
// and PyTorch's rules call each undefined or expected. Declined on every
// target; ordinary arguments run.
TEST(IndexPrecheck, DeclinesLoopsBoundedOnlyByAValue) {
  const c10::OperatorHandle legendre = Op("aten::special_legendre_polynomial_p", "");
  torch::jit::Stack small = {at::full({4}, 0.5), at::full({4}, 7.0)};
  EXPECT_FALSE(UncheckedRead(legendre, small).has_value());
  torch::jit::Stack huge = {at::full({4}, 0.5), at::full({4}, 1e30)};
  std::optional<std::string> why = UncheckedRead(legendre, huge);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("loops n times"), std::string::npos) << *why;
  torch::jit::Stack nan_degree = {at::full({4}, 0.5), at::full({4}, NAN)};
  EXPECT_TRUE(UncheckedRead(legendre, nan_degree).has_value());
  torch::jit::Stack scalar_x = {0.5, at::full({2}, -1e10)};
  EXPECT_TRUE(
      UncheckedRead(Op("aten::special_hermite_polynomial_h", "x_scalar"), scalar_x).has_value());

  const c10::OperatorHandle expm = Op("aten::matrix_exp", "");
  EXPECT_FALSE(UncheckedRead(expm, {at::full({2, 2}, 1e37)}).has_value());  // norm 2e37 fits
  EXPECT_TRUE(UncheckedRead(expm, {at::full({2, 2}, 3e38)}).has_value());   // overflows f32
  EXPECT_TRUE(UncheckedRead(expm, {at::full({2, 2}, INFINITY)}).has_value());
  // cpu-f64 holds the f32 program's matrix in float64: the program's dtype
  // decides, so both sides decline alike (else cpu's refusal is an error split).
  const graph::Program p = testing::MustParse(
      "divfuzz v1\ninput %m: f32[2,2] = fill(3e38)\n%e = aten::matrix_exp(%m)\noutput %e\n");
  const ops::TypeEnv f32 = {{"m", {graph::DType::kF32, {2, 2}}}};
  EXPECT_TRUE(UncheckedRead(expm, {at::full({2, 2}, 3e38, at::kDouble)}, &p.nodes[0], &f32)
                  .has_value());

  const c10::OperatorHandle svdvals = Op("aten::linalg_svdvals", "");
  EXPECT_FALSE(UncheckedRead(svdvals, {at::ones({2, 2}), c10::IValue()}).has_value());
  EXPECT_TRUE(UncheckedRead(svdvals, {at::full({2, 2}, NAN), c10::IValue()}).has_value());
  // LAPACK's geev segfaults on NaN (linalg_eigvals's crash bucket, expected
  // by nonfinite_inputs, wedged a worker for 50 s).
  const c10::OperatorHandle eigvals = Op("aten::linalg_eigvals", "");
  EXPECT_FALSE(UncheckedRead(eigvals, {at::ones({2, 2})}).has_value());
  EXPECT_TRUE(UncheckedRead(eigvals, {at::full({2, 2}, NAN)}).has_value());
  // cuSOLVER's QR of inf hung on the H100 and the H200 (linalg_qr's hang
  // bucket, expected by nonfinite_inputs); the older qr and geqrf too.
  for (const char* qr : {"aten::linalg_qr", "aten::qr", "aten::geqrf"}) {
    const c10::OperatorHandle op = Op(qr, "");
    torch::jit::Stack finite = {at::ones({2, 2})}, inf = {at::full({2, 2}, INFINITY)};
    if (op.schema().arguments().size() > 1) {
      finite.push_back(op.schema().arguments()[1].default_value().value());
      inf.push_back(op.schema().arguments()[1].default_value().value());
    }
    EXPECT_FALSE(UncheckedRead(op, finite).has_value()) << qr;
    EXPECT_TRUE(UncheckedRead(op, inf).has_value()) << qr;
  }
  // And the ops that take cuSOLVER's SVD inside: linalg_pinv of NaN hung on
  // the H100 (two hang buckets, trigger nan, in one campaign).
  for (const auto& [name, overload] :
       std::vector<std::pair<const char*, const char*>>{{"aten::linalg_pinv", ""},
                                                        {"aten::linalg_pinv", "atol_rtol_float"},
                                                        {"aten::pinverse", ""},
                                                        {"aten::linalg_matrix_rank", ""},
                                                        {"aten::nuclear_norm", ""},
                                                        {"aten::linalg_lstsq", ""}}) {
    const c10::OperatorHandle op = Op(name, overload);
    EXPECT_FALSE(UncheckedRead(op, {at::ones({2, 2})}).has_value()) << name << "." << overload;
    EXPECT_TRUE(UncheckedRead(op, {at::full({2, 2}, NAN)}).has_value()) << name << "." << overload;
  }
}

}  // namespace
}  // namespace divfuzz::exec
