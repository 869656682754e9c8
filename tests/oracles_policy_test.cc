// The tolerance policy file: PyTorch's OpInfo overrides shipped in
// oracles/default_policy.json, '_' notes, and the fallback from an overload to
// its op's entry.
#include <string>

#include "gtest/gtest.h"
#include "oracles/policy.h"

namespace divfuzz::oracles {
namespace {

using graph::DType;

Policy MustLoadShipped() {
  absl::StatusOr<Policy> p =
      LoadPolicy(std::string(DIVFUZZ_SOURCE_DIR) + "/oracles/default_policy.json");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : DefaultPolicy();
}

TEST(PolicyFile, ShipsOpInfoOverridesNoTighterThanTheDefaults) {
  const Policy shipped = MustLoadShipped();
  const Policy defaults = DefaultPolicy();
  // OpInfo logit: precisionOverride({bfloat16: 5e-1, float16: 5e-1}) for all tests
  // (torch 2.11.0 common_methods_invocations.py): atol 0.5, rtol stays the default.
  for (const char* op : {"aten::logit", "aten::special_logit"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(shipped.For(op, DType::kF16).atol, 0.5);
    EXPECT_EQ(shipped.For(op, DType::kF16).rtol, defaults.For(op, DType::kF16).rtol);
    EXPECT_EQ(shipped.For(op, DType::kBF16).atol, 0.5);
    EXPECT_EQ(shipped.For(op, DType::kF32).atol, defaults.For(op, DType::kF32).atol);
    EXPECT_EQ(shipped.For(op, DType::kF32).rtol, defaults.For(op, DType::kF32).rtol);
  }
  // OpInfo nn.functional.silu: toleranceOverride for TestUnaryUfuncs on cuda.
  EXPECT_EQ(shipped.For("aten::silu", DType::kF16).atol, 1e-3);
  EXPECT_GT(shipped.overrides.size(), 10u);
  for (const auto& [op, table] : shipped.overrides) {
    for (const auto& [d, tol] : table) {
      SCOPED_TRACE(op);
      EXPECT_GE(tol.rtol, defaults.For(op, d).rtol);
      EXPECT_GE(tol.atol, defaults.For(op, d).atol);
    }
  }
}

TEST(PolicyFile, FieldsStartingWithUnderscoreAreNotes) {
  absl::StatusOr<Policy> p = ParsePolicy(
      R"({"_doc": ["a note"], "_overrides_source": "where the overrides come from",
          "overrides": {"aten::logit": {"_source": "OpInfo logit: precisionOverride",
                                        "f16": {"rtol": 1e-3, "atol": 0.5}}}})",
      "notes.json");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->overrides.at("aten::logit").size(), 1u);
  EXPECT_EQ(p->For("aten::logit", DType::kF16).atol, 0.5);
  // Other unknown fields are still errors.
  absl::StatusOr<Policy> bad = ParsePolicy(
      R"({"overrides": {"aten::logit": {"source": "x", "f16": {"rtol": 1e-3, "atol": 0.5}}}})",
      "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: expected a floating dtype"), std::string::npos)
      << bad.status();
  EXPECT_FALSE(ParsePolicy(R"({"overides": {}})", "typo.json").ok());
}

TEST(PolicyFile, AnOpsEntryCoversItsOverloads) {
  absl::StatusOr<Policy> p = ParsePolicy(
      R"({"overrides": {"aten::pow": {"f32": {"rtol": 0.5, "atol": 0.25}},
                        "aten::pow.Scalar": {"f16": {"rtol": 0.125, "atol": 0.125}}}})",
      "overloads.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->For("aten::pow", DType::kF32).rtol, 0.5);
  EXPECT_EQ(p->For("aten::pow.Tensor_Tensor", DType::kF32).rtol, 0.5);
  EXPECT_EQ(p->For("aten::pow.Tensor_Tensor", DType::kF32).atol, 0.25);
  EXPECT_EQ(p->For("aten::pow.Tensor_Tensor", DType::kC64).rtol, 0.5);  // complex: its parts'
  // An overload's own entry wins for its dtypes; the op's covers the rest.
  EXPECT_EQ(p->For("aten::pow.Scalar", DType::kF16).rtol, 0.125);
  EXPECT_EQ(p->For("aten::pow.Scalar", DType::kF32).rtol, 0.5);
  // Neither another op with the same prefix nor another dtype is touched.
  EXPECT_EQ(p->For("aten::power.Tensor", DType::kF32).rtol, 1.3e-6);
  EXPECT_EQ(p->For("aten::pow.Tensor_Tensor", DType::kF64).rtol, 1e-7);
  EXPECT_EQ(p->For("aten::pow.Tensor_Tensor", DType::kF16).rtol, 1e-3);
}

}  // namespace
}  // namespace divfuzz::oracles
