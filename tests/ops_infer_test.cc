#include "gtest/gtest.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "ops/kernel_classes.h"

#include <limits>
#include "tests/test_util.h"

namespace divfuzz::ops {
namespace {

using graph::DType;

TEST(Promote, FollowsTorchForCommonPairs) {
  EXPECT_EQ(PromoteTypes(DType::kF16, DType::kBF16), DType::kF32);
  EXPECT_EQ(PromoteTypes(DType::kI32, DType::kF16), DType::kF16);
  EXPECT_EQ(PromoteTypes(DType::kU8, DType::kI8), DType::kI16);
  EXPECT_EQ(PromoteTypes(DType::kI64, DType::kI8), DType::kI64);
  EXPECT_EQ(PromoteTypes(DType::kBool, DType::kF64), DType::kF64);
}

TEST(Promote, ZeroDimOperandsOnlyDecideAcrossCategories) {
  EXPECT_EQ(ResultType({DType::kBF16, {1}}, {DType::kF32, {}}), DType::kBF16);
  EXPECT_EQ(ResultType({DType::kI8, {3}}, {DType::kI64, {}}), DType::kI8);
  EXPECT_EQ(ResultType({DType::kI32, {3}}, {DType::kF64, {}}), DType::kF64);
  EXPECT_EQ(ResultType({DType::kF16, {}}, {DType::kF64, {}}), DType::kF64);
  EXPECT_EQ(ResultType({DType::kF16, {2}}, {DType::kF64, {2}}), DType::kF64);
}

TEST(Broadcast, ShapesAlignFromTheRight) {
  EXPECT_EQ(*BroadcastShapes({4, 1, 3}, {5, 1}), (std::vector<int64_t>{4, 5, 3}));
  EXPECT_FALSE(BroadcastShapes({2, 3}, {4}).ok());
}

TEST(Catalogue, HasTheFamiliesOfTheVerticalSlice) {
  EXPECT_GE(Catalogue().size(), 40u);
  for (const char* op : {"aten::logdet", "aten::slogdet", "aten::det", "aten::inverse",
                         "aten::linalg_solve", "aten::linalg_cholesky", "aten::softmax.int",
                         "aten::log_softmax.int", "aten::linear", "aten::matmul", "aten::sum",
                         "aten::exp", "aten::atanh", "aten::div.Tensor", "aten::lt.Tensor"}) {
    EXPECT_NE(FindOp(op), nullptr) << op;
  }
  EXPECT_EQ(FindOp("aten::no_such_op"), nullptr);
}

TEST(InferProgram, TypesTheSeedCaseShapes) {
  graph::Program p = testing::MustParse(R"(divfuzz v1
input %x: f32[4,8] = fill(0.4)
input %w1: f32[16,8] = normal(seed=1)
input %b1: f32[16] = normal(seed=2)
input %w2: f32[4,16] = normal(seed=3)
input %b2: f32[4] = normal(seed=4)
%y = aten::linear(%x, %w1, %b1)
%z = aten::add.Scalar(%y, 2)
%v = aten::arccosh(%z)
%u = aten::linear(%v, %w2, %b2)
%d = aten::logdet(%u)
%s, %l = aten::slogdet(%u)
%m = aten::sum.dim_IntList(%u, [0], keepdim=True)
%c = aten::lt.Tensor(%u, %m)
output %d, %s, %l, %c
)");
  TypeEnv t = testing::MustInfer(p);
  EXPECT_EQ(t.at("u").shape, (std::vector<int64_t>{4, 4}));
  EXPECT_TRUE(t.at("d").shape.empty());
  EXPECT_TRUE(t.at("l").shape.empty());
  EXPECT_EQ(t.at("m").shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(t.at("c").dtype, DType::kBool);
}

TEST(InferProgram, UnknownOpAndBadShapesNameTheLine) {
  absl::StatusOr<graph::Program> p = graph::ParseProgram(
      "divfuzz v1\ninput %x: f32[3,4] = fill(1.0)\n%y = aten::frobnicate(%x)\noutput %y\n",
      "bad.dfz");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<TypeEnv> t = InferProgram(*p, "bad.dfz");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "bad.dfz:3:1: expected an op from the catalogue (see 'divfuzz ops'), got "
            "'aten::frobnicate'");

  p = graph::ParseProgram(
      "divfuzz v1\ninput %x: f32[3,4] = fill(1.0)\n%y = aten::logdet(%x)\noutput %y\n", "sq.dfz");
  ASSERT_TRUE(p.ok());
  t = InferProgram(*p, "sq.dfz");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("sq.dfz:3:1: aten::logdet: expected a (batch of) square"),
            std::string::npos)
      << t.status();
}

// batch_norm's weight is documented as (C): the forward takes a [1, C] one
// and the CPU's backward then raises (pytorch#188358), an off-contract input
// the generator made (session 43's INFRA verdict). A 0-d weight of a
// 1-channel input is C values, and stays.
TEST(InferProgram, AChannelParameterOfAnotherShapeThanCIsRefused) {
  auto infer = [](const std::string& weight, const std::string& input) {
    absl::StatusOr<graph::Program> p = graph::ParseProgram(
        "divfuzz v1\ninput %x: f32" + input + " = fill(1.0)\ninput %w: f32" + weight +
            " = fill(1.0)\n%y = aten::batch_norm(%x, %w, None, None, None, True, 0.1, 1e-05, "
            "True)\noutput %y\n",
        "bn.dfz");
    EXPECT_TRUE(p.ok()) << p.status();
    return InferProgram(*p, "bn.dfz");
  };
  absl::StatusOr<TypeEnv> t = infer("[1,2]", "[3,2,4]");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "bn.dfz:4:1: aten::batch_norm: aten::batch_norm's weight must have shape (C) = [2] "
            "(the input's dim 1), got f32[1,2]");
  EXPECT_TRUE(infer("[2]", "[3,2,4]").ok());
  EXPECT_TRUE(infer("[]", "[3,1,4]").ok());
  EXPECT_FALSE(infer("[3]", "[3,2,4]").ok());
}

}  // namespace
}  // namespace divfuzz::ops

namespace divfuzz::ops {
namespace {

TEST(NormalizationEps, ReadsTheKeywordThePositionOrTheSchemasDefault) {
  auto eps = [](const char* statement, graph::DType dt = graph::DType::kF32) {
    const std::string text = std::string("divfuzz v1\ninput %x: f32[2,3] = fill(1.0)\n") +
                             statement + "\noutput %y\n";
    const graph::Program p = testing::MustParse(text.c_str());
    return NormalizationEpsOf(p.nodes[0], dt);
  };
  // Positional eps (session 33's batch_norm f16 gave 1.0; it had been read as 1e-5).
  EXPECT_EQ(eps("%y = aten::batch_norm(%x, None, None, None, None, True, 0.0, 1.0, True)"), 1.0);
  EXPECT_EQ(eps("%y = aten::batch_norm(%x, None, None, None, None, True, 0.0)"), 1e-5);
  EXPECT_EQ(eps("%y = aten::layer_norm(%x, [3], eps=0.5)"), 0.5);
  EXPECT_EQ(eps("%y = aten::group_norm(%x, 1, None, None, 0.25)"), 0.25);
  // rms_norm's None: the opmath dtype's epsilon.
  EXPECT_EQ(eps("%y = aten::rms_norm(%x, [3])"), std::numeric_limits<float>::epsilon());
  EXPECT_EQ(eps("%y = aten::rms_norm(%x, [3])", graph::DType::kF64),
            std::numeric_limits<double>::epsilon());
  EXPECT_FALSE(eps("%y = aten::relu(%x)").has_value());
}

}  // namespace
}  // namespace divfuzz::ops

namespace divfuzz::ops {
namespace {

TEST(RandomArguments, ADropoutOtherThanZeroIsRefusedWithItsLine) {
  const graph::Program p = testing::MustParse(R"(divfuzz v1
input %q: f32[1,2,4] = fill(1.0)
%o = aten::scaled_dot_product_attention(%q, %q, %q, None, 0.4)
output %o
)");
  absl::StatusOr<TypeEnv> t = InferProgram(p, "sdpa.dfz");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("sdpa.dfz:3:1"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("dropout_p"), std::string::npos) << t.status();
  const graph::Program zero = testing::MustParse(R"(divfuzz v1
input %q: f32[1,2,4] = fill(1.0)
%o = aten::scaled_dot_product_attention(%q, %q, %q, None, 0.0)
output %o
)");
  EXPECT_TRUE(InferProgram(zero, "sdpa.dfz").ok());
}

}  // namespace
}  // namespace divfuzz::ops
