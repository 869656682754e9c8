// The memory budget rejects programs whose tensors would not fit, naming the
// largest value and its line, before anything is allocated.
#include "exec/memory_budget.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

TEST(MemoryBudget, CountsEveryValueAtFloat64Width) {
  const graph::Program p = testing::MustParse(
      "divfuzz v1\ninput %a: f32[4,1] = fill(1)\ninput %b: f64[1,4] = fill(2)\n"
      "input %z: c64[2] = fill(1)\n%c = aten::add.Tensor(%a, %b)\noutput %c\n");
  const ops::TypeEnv types = testing::MustInfer(p);
  // a: 4 x 8, b: 4 x 8, z (complex): 2 x 16, c (f64 [4,4]): 16 x 8.
  EXPECT_EQ(exec::FootprintBytes(types), 4 * 8 + 4 * 8 + 2 * 16 + 16 * 8);
  EXPECT_TRUE(exec::CheckMemoryBudget(p, types, 1).ok());
}

TEST(MemoryBudget, NamesTheLargestValueAndItsLine) {
  const graph::Program p = testing::MustParse(
      "divfuzz v1\ninput %a: f32[3000,1] = fill(1)\ninput %b: f32[1,3000] = fill(2)\n"
      "%c = aten::mm(%a, %b)\noutput %c\n");
  const ops::TypeEnv types = testing::MustInfer(p);
  const absl::Status s = exec::CheckMemoryBudget(p, types, 32, "big.dfz");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("big.dfz:4:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("largest: %c, 69 MiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("over the memory budget of 32 MiB"), std::string::npos) << s.message();
  EXPECT_TRUE(exec::CheckMemoryBudget(p, types, 128).ok());
}

}  // namespace
}  // namespace divfuzz
