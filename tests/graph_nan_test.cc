// Issue 32: a NaN's sign and payload survive the format: parse, print,
// materialize (graph/dtype.h RoundToDType says what each dtype keeps).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "graph/dtype.h"
#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

double FromBits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

TEST(GraphNan, SignAndPayloadRoundTripThroughParseAndPrint) {
  const char* text =
      "divfuzz v1\n"
      "input %a: f64[6] = values(nan, -nan, NaN_0x1, -nan_0xFE00000000000, +nan_0x8000000000000, "
      "-nan_0xfffffffffffff)\n"
      "input %b: bf16[2] = fill(-nan)\n"
      "%c = aten::f(%a, -nan, nan_0x4, [-nan_0x10])\n"
      "output %c\n";
  absl::StatusOr<Program> p = ParseProgram(text);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::vector<double>& v = p->inputs[0].payload.values;
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(Bits(v[0]), 0x7ff8000000000000u);
  EXPECT_EQ(Bits(v[1]), 0xfff8000000000000u);
  EXPECT_EQ(Bits(v[2]), 0x7ff0000000000001u);  // a signaling NaN, as written
  EXPECT_EQ(Bits(v[3]), 0xffffe00000000000u);  // bf16 0xffff read as float64
  EXPECT_EQ(Bits(v[4]), 0x7ff8000000000000u);
  EXPECT_EQ(Bits(v[5]), 0xffffffffffffffffu);
  EXPECT_EQ(Bits(p->inputs[1].payload.values[0]), 0xfff8000000000000u);
  EXPECT_EQ(Bits(p->nodes[0].args[1].value.f), 0xfff8000000000000u);
  EXPECT_EQ(Bits(p->nodes[0].args[2].value.f), 0x7ff0000000000004u);
  EXPECT_EQ(Bits(p->nodes[0].args[3].value.list[0].f), 0xfff0000000000010u);

  const std::string printed = PrintProgram(*p);
  EXPECT_NE(printed.find("values(nan, -nan, nan_0x1, -nan_0xfe00000000000, nan, "
                         "-nan_0xfffffffffffff)"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("fill(-nan)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("aten::f(%a, -nan, nan_0x4, [-nan_0x10])"), std::string::npos) << printed;
  absl::StatusOr<Program> again = ParseProgram(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintProgram(*again), printed);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(Bits(again->inputs[0].payload.values[i]), Bits(v[i])) << i;
  }
}

TEST(GraphNan, FormatFloatWritesEveryNaNExactly) {
  EXPECT_EQ(FormatFloat(FromBits(0xfff8000000000000u)), "-nan");
  EXPECT_EQ(FormatHexFloat(FromBits(0xfff8000000000000u)), "-nan");
  EXPECT_EQ(FormatHexFloat(FromBits(0x7ff8000000000000u)), "nan");
  // bf16 0xffff (what torch's vectorized float -> bf16 cast writes for a NaN),
  // read as float64.
  EXPECT_EQ(FormatHexFloat(FromBits(0xffffe00000000000u)), "-nan_0xfe00000000000");
  EXPECT_EQ(FormatFloat(FromBits(0x7ff0000000000001u)), "nan_0x1");
}

TEST(GraphNan, MalformedPayloadsAreRejected) {
  for (const char* bad : {"nan_0x", "nan_0x0", "nan_0x10000000000000", "nan_0xg", "-nan_1",
                          "nan_0x1p3", "-nan_0x8000000000000000"}) {
    absl::StatusOr<Program> p = ParseProgram(std::string("divfuzz v1\ninput %a: f32[1] = values(") +
                                             bad + ")\noutput %a\n");
    EXPECT_FALSE(p.ok()) << bad;
  }
}

// Each floating dtype keeps the sign and the fraction's top bits it has, with
// the quiet bit set below float64 (the conversion exec/ and the repros make).
TEST(GraphNan, MaterializedNaNsKeepTheirSignInEveryFloatingDType) {
  struct Case {
    DType dtype;
    uint64_t minus_nan, payload;  // -nan; -nan_0xfffffffffffff
  };
  for (const Case& c : {Case{DType::kF16, 0xfff8000000000000u, 0xfffffc0000000000u},
                        Case{DType::kBF16, 0xfff8000000000000u, 0xffffe00000000000u},
                        Case{DType::kF32, 0xfff8000000000000u, 0xffffffffe0000000u},
                        Case{DType::kF64, 0xfff8000000000000u, 0xffffffffffffffffu},
                        Case{DType::kC64, 0xfff8000000000000u, 0xffffffffe0000000u},
                        Case{DType::kC128, 0xfff8000000000000u, 0xffffffffffffffffu}}) {
    Input in;
    in.name = "a";
    in.type.dtype = c.dtype;
    in.type.shape = {2};
    in.payload.kind = Payload::Kind::kValues;
    in.payload.values = {-NAN, FromBits(0xffffffffffffffffu), std::nan(""),
                         FromBits(0xfff0000000000001u)};
    if (!IsComplex(c.dtype)) in.payload.values.resize(2);
    const std::vector<double> v = MaterializePayload(in);
    ASSERT_EQ(v.size(), in.payload.values.size());
    EXPECT_EQ(Bits(v[0]), c.minus_nan) << DTypeName(c.dtype);
    EXPECT_EQ(Bits(v[1]), c.payload) << DTypeName(c.dtype);
    if (IsComplex(c.dtype)) {
      EXPECT_EQ(Bits(v[2]), 0x7ff8000000000000u) << DTypeName(c.dtype);
      // A signaling NaN is quieted below float64, kept in float64.
      EXPECT_EQ(Bits(v[3]), c.dtype == DType::kC128 ? 0xfff0000000000001u : 0xfff8000000000000u);
    }
    EXPECT_EQ(Bits(RoundToDType(c.dtype, -NAN)), c.minus_nan);
  }
  // fill(-nan) in bf16, and in a generated payload's rounding alike.
  Input fill;
  fill.type.dtype = DType::kBF16;
  fill.type.shape = {3};
  fill.payload.kind = Payload::Kind::kFill;
  fill.payload.values = {-NAN};
  for (double x : MaterializePayload(fill)) EXPECT_EQ(Bits(x), 0xfff8000000000000u);
}

}  // namespace
}  // namespace divfuzz::graph
