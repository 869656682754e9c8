// The numerics payloads checked with libtorch (rank by SVD, cholesky, cond,
// determinants), and input layouts as every CPU target builds them: really
// non-contiguous / channels-last, with the same strides and values on cpu,
// cpu-f64, cpu-scalar (whose helper process gets the program as text) and
// cuda where there is one.
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_cond.h>
#include <ATen/ops/linalg_det.h>
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/ones.h>

#include <cmath>
#include <cstring>

#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "graph/materialize.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

using testing::MustInfer;
using testing::MustParse;

// The input's exact values as a float64 tensor of its shape.
at::Tensor Float64Of(const std::string& decl) {
  const graph::Program p =
      MustParse("divfuzz v1\ninput %x: " + decl + "\n%y = aten::abs(%x)\noutput %y\n");
  if (p.inputs.empty()) return at::Tensor();
  std::vector<double> v = graph::MaterializePayload(p.inputs[0]);
  if (graph::IsComplex(p.inputs[0].type.dtype)) {
    std::vector<double> re;
    for (size_t i = 0; i < v.size(); i += 2) re.push_back(v[i]);
    v = re;
  }
  return at::from_blob(v.data(), {static_cast<int64_t>(v.size())}, at::kDouble)
      .clone()
      .reshape(p.inputs[0].type.shape);
}

TEST(NumericInputs, SingularHasDeterminantZeroToRounding) {
  for (const char* decl : {"f32[4,6,6] = singular(seed=1)", "f64[3,5,5] = singular(seed=2)",
                           "bf16[2,4,4] = singular(seed=3)", "f16[8,8] = singular(seed=4)"}) {
    const at::Tensor a = Float64Of(decl);
    const at::Tensor det = at::linalg_det(a).abs();
    // Hadamard's bound on |det|: the product of the row norms.
    const at::Tensor bound = a.norm(2, {-1}).prod(-1);
    EXPECT_TRUE((det <= bound * 1e-12).all().item<bool>())
        << decl << "\n det " << det << "\n bound " << bound;
  }
}

TEST(NumericInputs, NearSingularIsIllConditionedButNotSingular) {
  const at::Tensor a = Float64Of("f32[4,5,5] = near_singular(seed=3)");
  const at::Tensor cond = at::linalg_cond(a);
  EXPECT_TRUE((cond > 1e4).all().item<bool>()) << cond;
  EXPECT_TRUE((at::linalg_det(a) != 0).all().item<bool>());
}

TEST(NumericInputs, RankDeficientHasTheAskedRank) {
  struct Case {
    const char* decl;
    int64_t rank;
    double tol;  // singular values below tol * max count as zero
  };
  for (const Case& c : {Case{"f64[7,5] = rank_deficient(seed=1, rank=3)", 3, 1e-10},
                        Case{"f32[2,6,9] = rank_deficient(seed=2, rank=2)", 2, 1e-5},
                        Case{"f32[6,6] = rank_deficient(seed=3, rank=0)", 0, 1e-5},
                        Case{"f64[4,4] = rank_deficient(seed=4, rank=4)", 4, 1e-10}}) {
    const at::Tensor s = at::linalg_svdvals(Float64Of(c.decl));
    const at::Tensor big = s.amax(-1, /*keepdim=*/true);
    const at::Tensor rank = (s > big * c.tol).sum(-1);
    EXPECT_TRUE((rank == c.rank).all().item<bool>()) << c.decl << "\n" << s;
  }
}

TEST(NumericInputs, SpdCholeskySucceeds) {
  for (const char* decl :
       {"f32[3,6,6] = spd(seed=1)", "f64[10,10] = spd(seed=2)", "bf16[5,5] = spd(seed=3)",
        "f16[2,7,7] = spd(seed=4)", "c64[4,4] = spd(seed=5)"}) {
    const at::Tensor a = Float64Of(decl);
    EXPECT_TRUE(at::equal(a, a.transpose(-1, -2))) << decl;
    const auto [l, info] = at::linalg_cholesky_ex(a);
    EXPECT_TRUE((info == 0).all().item<bool>()) << decl;
  }
  // In the input's own dtype, too.
  const at::Tensor f32 = Float64Of("f32[8,8] = spd(seed=6)").to(at::kFloat);
  EXPECT_EQ(std::get<1>(at::linalg_cholesky_ex(f32)).item<int>(), 0);
}

TEST(NumericInputs, IllConditionedHasTheAskedCondition) {
  struct Case {
    const char* decl;
    double cond;
  };
  for (const Case& c : {Case{"f64[6,6] = ill_conditioned(seed=1, cond=1e+08)", 1e8},
                        Case{"f64[3,5,8] = ill_conditioned(seed=2, cond=1000.0)", 1e3},
                        Case{"f32[5,5] = ill_conditioned(seed=3, cond=1000.0)", 1e3},
                        Case{"f64[4,4] = ill_conditioned(seed=4, cond=1e+14)", 1e14}}) {
    const at::Tensor cond = at::linalg_cond(Float64Of(c.decl));
    EXPECT_TRUE((cond > c.cond / 2).all().item<bool>()) << c.decl << " " << cond;
    EXPECT_TRUE((cond < c.cond * 2).all().item<bool>()) << c.decl << " " << cond;
  }
}

TEST(NumericInputs, ScaledRowsSpanManyOrders) {
  const at::Tensor a = Float64Of("f64[12,12] = scaled(seed=1, decades=10.0)");
  const at::Tensor rows = a.abs().amax(-1);
  EXPECT_GT((rows.max() / rows.min()).item<double>(), 1e6);
  EXPECT_GT(at::linalg_cond(a).item<double>(), 1e6);
}

// A program that reports its input's strides: aten::stride.int returns an
// int, which every target records as a 0-d tensor.
constexpr char kLayouts[] = R"(divfuzz v1
input %t: f32[4,6] layout=transposed = planted(seed=1)
input %s: f64[3,5] layout=strided = limits(seed=2)
input %c: bf16[2,3,4,5] layout=channels_last = edges(seed=3)
input %k: i32[7] layout=strided = ties(seed=4, distinct=3)
%t0 = aten::stride.int(%t, 0)
%t1 = aten::stride.int(%t, 1)
%s0 = aten::stride.int(%s, 0)
%s1 = aten::stride.int(%s, 1)
%c1 = aten::stride.int(%c, 1)
%c3 = aten::stride.int(%c, 3)
%k0 = aten::stride.int(%k, 0)
%tc = aten::clone(%t)
%sc = aten::sin(%s)
%cc = aten::relu(%c)
%kc = aten::neg(%k)
output %t0, %t1, %s0, %s1, %c1, %c3, %k0, %tc, %sc, %cc, %kc
)";

TEST(NumericInputs, LayoutsAreRealOnEveryTarget) {
  const graph::Program p = MustParse(kLayouts);
  const std::vector<int64_t> want_strides = {1, 4, 10, 2, 1, 3, 2};
  std::vector<exec::RunResult> runs;
  std::vector<exec::Target> targets = {exec::Target::kCpu, exec::Target::kCpuF64,
                                       exec::Target::kCpuScalar};
  if (exec::CudaAvailable()) targets.push_back(exec::Target::kCuda);
  for (exec::Target t : targets) {
    exec::RunResult r = exec::Run(p, ops::TypeEnv{}, t);
    ASSERT_TRUE(r.setup_error.empty()) << r.setup_error;
    ASSERT_EQ(r.nodes.size(), 11u);
    for (size_t i = 0; i < want_strides.size(); ++i) {
      ASSERT_FALSE(r.nodes[i].error) << exec::TargetName(t) << " " << r.nodes[i].error->message;
      EXPECT_EQ(r.nodes[i].outputs[0].item<double>(), want_strides[i])
          << exec::TargetName(t) << " node " << i;
    }
    runs.push_back(std::move(r));
  }
  // The values do not depend on the layout or the target (these ops are exact
  // or the same kernel; sin is compared on the CPU targets only): cpu, cpu-f64
  // (rounded back), cpu-scalar and cuda agree bit for bit.
  for (size_t i = 7; i < 11; ++i) {
    ASSERT_FALSE(runs[0].nodes[i].error) << runs[0].nodes[i].error->message;
    const at::Tensor cpu = runs[0].nodes[i].outputs[0];
    for (size_t k = 1; k < runs.size(); ++k) {
      if (i == 8 && runs[k].target == exec::Target::kCuda) continue;
      const at::Tensor other = runs[k].nodes[i].outputs[0].to(cpu.scalar_type());
      // Bit for bit up to NaN payloads: the inputs hold NaNs.
      const at::Tensor same = cpu.eq(other).logical_or(cpu.isnan().logical_and(other.isnan()));
      EXPECT_TRUE(same.all().item<bool>()) << "node " << i << " target " << k;
    }
  }
}

TEST(NumericInputs, ApplyLayoutKeepsValues) {
  const at::Tensor x = at::arange(24, at::kFloat).reshape({1, 2, 3, 4});
  const at::Tensor t = exec::ApplyLayout(x, graph::Layout::kTransposed);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (c10::IntArrayRef{24, 12, 1, 3}));
  const at::Tensor s = exec::ApplyLayout(x, graph::Layout::kStrided);
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.stride(-1), 2);
  const at::Tensor c = exec::ApplyLayout(x, graph::Layout::kChannelsLast);
  EXPECT_TRUE(c.is_contiguous(at::MemoryFormat::ChannelsLast));
  for (const at::Tensor& v : {t, s, c}) EXPECT_TRUE(at::equal(v, x));
  // Empty and 0-d tensors pass through.
  const at::Tensor e = exec::ApplyLayout(at::ones({3, 0}), graph::Layout::kStrided);
  EXPECT_EQ(e.sizes(), (c10::IntArrayRef{3, 0}));
  EXPECT_EQ(exec::ApplyLayout(at::ones({}), graph::Layout::kStrided).dim(), 0);
}

}  // namespace
}  // namespace divfuzz
