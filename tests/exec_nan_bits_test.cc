// Issue 32: every target builds a NaN input with its sign and payload bit for
// bit (torch's own float64 -> bfloat16 cast writes 0x7fc0 for any NaN in its
// scalar loop and 0xffff in its vectorized one).
#include <ATen/ops/full.h>
#include <ATen/ops/view_as_real.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz::exec {
namespace {

// Every element's bits, as unsigned integers of the element's width.
std::vector<uint64_t> ElementBits(const at::Tensor& t) {
  at::Tensor c = (t.is_complex() ? at::view_as_real(t) : t).contiguous();
  std::vector<uint64_t> out;
  const size_t width = c.element_size();
  const char* p = static_cast<const char*>(c.data_ptr());
  for (int64_t i = 0; i < c.numel(); ++i) {
    uint64_t b = 0;
    std::memcpy(&b, p + i * width, width);
    out.push_back(b);
  }
  return out;
}

struct DTypeBits {
  const char* name;
  uint64_t minus_nan, plus_nan, payload;  // -nan, nan, -nan_0xfffffffffffff
};

constexpr DTypeBits kCases[] = {
    {"f16", 0xfe00, 0x7e00, 0xffff},
    {"bf16", 0xffc0, 0x7fc0, 0xffff},
    {"f32", 0xffc00000, 0x7fc00000, 0xffffffff},
    {"f64", 0xfff8000000000000u, 0x7ff8000000000000u, 0xffffffffffffffffu},
    {"c64", 0xffc00000, 0x7fc00000, 0xffffffff},
    {"c128", 0xfff8000000000000u, 0x7ff8000000000000u, 0xffffffffffffffffu},
};

// Small (the cast's scalar loop) and large (its vectorized body) inputs, on
// the CPU, the float64 CPU reference and ATen's scalar kernels alike.
TEST(NanBits, InputsKeepTheSignAndPayloadInEveryFloatingDTypeOnEveryCpuTarget) {
  for (const DTypeBits& c : kCases) {
    for (int n : {3, 999}) {
      const bool complex = std::string(c.name)[0] == 'c';
      const std::string text =
          "divfuzz v1\ninput %m: " + std::string(c.name) + "[" + std::to_string(n) +
          "] = fill(-nan)\ninput %p: " + c.name + "[3] = values(nan, -nan_0xfffffffffffff, 1.0" +
          (complex ? ", -nan, nan, nan_0x1" : "") + ")\n%y = aten::clone(%m)\noutput %y\n";
      graph::Program p = testing::MustParse(text);
      ops::TypeEnv types = testing::MustInfer(p);
      for (Target target : {Target::kCpu, Target::kCpuScalar}) {
        SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n) + " on " +
                     std::string(TargetName(target)));
        const RunResult r = exec::Run(p, types, target);
        ASSERT_TRUE(r.setup_error.empty()) << r.setup_error;
        const std::vector<uint64_t> m = ElementBits(r.inputs.at("m"));
        ASSERT_EQ(m.size(), static_cast<size_t>(complex ? 2 * n : n));
        for (size_t i = 0; i < m.size(); ++i) {
          // complex: fill(V) is V + 0i
          const uint64_t want = complex && i % 2 ? 0 : c.minus_nan;
          ASSERT_EQ(m[i], want) << i;
        }
        const std::vector<uint64_t> q = ElementBits(r.inputs.at("p"));
        EXPECT_EQ(q[0], c.plus_nan);
        EXPECT_EQ(q[1], c.payload);
        if (complex) EXPECT_EQ(q[3], c.minus_nan);
      }
      // The float64 reference's inputs are the same values, upcast exactly.
      const RunResult f64 = exec::Run(p, types, Target::kCpuF64);
      ASSERT_TRUE(f64.setup_error.empty()) << f64.setup_error;
      at::Tensor back =
          ToDTypeKeepingNaNs(f64.inputs.at("m").to(complex ? at::kComplexDouble : at::kDouble),
                             ToScalarType(p.inputs[0].type.dtype));
      EXPECT_EQ(ElementBits(back)[0], c.minus_nan);
    }
  }
}

// cpu-f64 rounds its float64 results back to the program's dtype: a NaN keeps
// its sign there too (neg of nan is -nan).
TEST(NanBits, TheFloat64ReferenceRoundsNaNResultsBackWithTheirSign) {
  for (int n : {3, 999}) {
    graph::Program p = testing::MustParse("divfuzz v1\ninput %x: bf16[" + std::to_string(n) +
                                          "] = fill(nan)\n%y = aten::neg(%x)\noutput %y\n");
    const RunResult r = exec::Run(p, testing::MustInfer(p), Target::kCpuF64);
    ASSERT_FALSE(r.nodes[0].error);
    for (uint64_t b : ElementBits(r.nodes[0].outputs[0])) ASSERT_EQ(b, 0xffc0u) << n;
  }
  // The cast itself, on a size torch's cast would vectorize (0xffff there).
  const at::Tensor minus = at::full({999}, -NAN, at::TensorOptions().dtype(at::kDouble));
  const std::vector<uint64_t> ours = ElementBits(ToDTypeKeepingNaNs(minus, at::kBFloat16));
  for (uint64_t b : ours) ASSERT_EQ(b, 0xffc0u);
}

}  // namespace
}  // namespace divfuzz::exec
