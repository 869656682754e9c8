// Issue 32: both repros state a NaN input bit for bit, its sign included, as
// the executor builds it (torch's float64 -> bfloat16 cast would not).
#include <ATen/ops/view_as_real.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "minimize/emit_cpp.h"
#include "minimize/emit_python.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using ::testing::HasSubstr;

constexpr char kNaNs[] = R"(divfuzz v1
input %b: bf16[4] = values(-nan, nan, -nan_0xfe00000000000, 1.0)
input %bb: bf16[999] = fill(-nan)
input %h: f16[3] = values(-nan, nan_0x4000000000000, -nan_0xfffffffffffff)
input %f: f32[3] = values(-nan, -nan_0xfffffe0000000, 2.0)
input %d: f64[2] = values(-nan, nan_0x1)
input %c: c64[2] = values(-nan, nan, 1.0, -nan_0xfffffe0000000)
input %z: c128[1] = fill(-nan)
%y = aten::neg(%b)
output %y
)";

ReproSpec Spec() {
  ReproSpec spec;
  spec.node_index = 0;
  spec.title = "nan";
  return spec;
}

// Each input's element bits, hex, as the executor builds them on the CPU.
std::map<std::string, std::string> ExecutorBits(const graph::Program& p) {
  const exec::RunResult r = exec::Run(p, testing::MustInfer(p), exec::Target::kCpu);
  std::map<std::string, std::string> out;
  for (const auto& [name, t] : r.inputs) {
    const at::Tensor c = (t.is_complex() ? at::view_as_real(t) : t).contiguous();
    const size_t width = c.element_size();
    std::string s;
    for (int64_t i = 0; i < c.numel(); ++i) {
      uint64_t b = 0;
      std::memcpy(&b, static_cast<const char*>(c.data_ptr()) + i * width, width);
      char buf[24];
      std::snprintf(buf, sizeof(buf), "%llx ", static_cast<unsigned long long>(b));
      s += buf;
    }
    out[name] = s;
  }
  return out;
}

TEST(NanRepro, PythonReproBuildsNaNInputsBitForBitLikeTheExecutor) {
  const graph::Program p = testing::MustParse(kNaNs);
  const std::string script = EmitPython(p, Spec());
  const std::string path = ::testing::TempDir() + "/nan_repro.py";
  std::ofstream(path, std::ios::binary) << script;
  // Import the script (its main() runs only as __main__) and print each
  // input's element bits.
  const std::string py =
      "import importlib.util, torch\n"
      "s = importlib.util.spec_from_file_location('repro', '" +
      path +
      "')\n"
      "m = importlib.util.module_from_spec(s)\n"
      "s.loader.exec_module(m)\n"
      "ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}\n"
      "for name, t in sorted(m.make_inputs().items()):\n"
      "    c = (torch.view_as_real(t) if t.is_complex() else t).contiguous().reshape(-1)\n"
      "    w = c.element_size()\n"
      "    bits = [x & ((1 << (8 * w)) - 1) for x in c.view(ints[w]).tolist()]\n"
      "    print(name + ':' + ''.join('%x ' % b for b in bits))\n";
  std::ofstream(path + ".check.py") << py;
  const testing::CommandRun run = testing::RunShell(testing::Python() + " " + path + ".check.py");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::string> got;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon != std::string::npos) got[line.substr(0, colon)] = line.substr(colon + 1);
  }
  const std::map<std::string, std::string> want = ExecutorBits(p);
  ASSERT_EQ(want.size(), 7u);
  for (const auto& [name, bits] : want) EXPECT_EQ(got[name], bits) << name;
  // The sign is there: bf16 -nan is 0xffc0, and the vectorized size alike.
  EXPECT_EQ(want.at("b"), "ffc0 7fc0 ffff 3f80 ");
  EXPECT_THAT(want.at("bb"), ::testing::StartsWith("ffc0 ffc0 "));
  EXPECT_THAT(want.at("bb"), ::testing::Not(HasSubstr("7fc0")));
  EXPECT_THAT(want.at("bb"), ::testing::Not(HasSubstr("ffff")));
  EXPECT_EQ(want.at("h"), "fe00 7f00 ffff ");
  EXPECT_EQ(want.at("d"), "fff8000000000000 7ff0000000000001 ");
  // The literals themselves.
  EXPECT_THAT(script, HasSubstr("'-nan_0xfe00000000000'"));
  EXPECT_THAT(script, HasSubstr("'-nan'"));
  std::remove(path.c_str());
  std::remove((path + ".check.py").c_str());
}

TEST(NanRepro, CppReproStatesEveryNaNExactly) {
  const graph::Program p = testing::MustParse(kNaNs);
  const std::string all = EmitCpp(p, Spec()).main_cpp;
  EXPECT_THAT(all, HasSubstr("-kNaN"));
  EXPECT_THAT(all, HasSubstr("NaNBits(0xffffe00000000000u)"));
  EXPECT_THAT(all, HasSubstr("NaNBits(0x7ff0000000000001u)"));
  // Built through the NaN-keeping cast, never torch's alone.
  EXPECT_THAT(all, HasSubstr("at::Tensor Cast(const at::Tensor& x, at::ScalarType t)"));
  EXPECT_THAT(all, ::testing::Not(HasSubstr(".clone().to(t)")));
}

}  // namespace
}  // namespace divfuzz::minimize
