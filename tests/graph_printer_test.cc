// The canonical printer: float formatting, bit-exact round trips through the
// parser, and printing programs built in memory.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/rng.h"
#include "graph/validate.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

double FromBits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// Same double, except that NaNs only need to agree on being NaN and the sign.
void ExpectSameDouble(double want, double got) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got));
    EXPECT_EQ(std::signbit(want), std::signbit(got));
  } else {
    EXPECT_EQ(Bits(want), Bits(got)) << FormatHexFloat(want) << " vs " << FormatHexFloat(got);
  }
}

TEST(GraphPrinter, FormatFloat) {
  EXPECT_EQ(FormatFloat(2.0), "2.0");
  EXPECT_EQ(FormatFloat(-0.0), "-0.0");
  EXPECT_EQ(FormatFloat(0.0), "0.0");
  EXPECT_EQ(FormatFloat(1e-5), "1e-05");
  EXPECT_EQ(FormatFloat(0.1), "0.1");
  EXPECT_EQ(FormatFloat(123456.0), "123456.0");
  EXPECT_EQ(FormatFloat(1e20), "1e+20");
  EXPECT_EQ(FormatFloat(0.4033372700214386), "0.4033372700214386");
  EXPECT_EQ(FormatFloat(5e-324), "5e-324");
  EXPECT_EQ(FormatFloat(HUGE_VAL), "inf");
  EXPECT_EQ(FormatFloat(-HUGE_VAL), "-inf");
  EXPECT_EQ(FormatFloat(std::nan("")), "nan");
  EXPECT_EQ(FormatFloat(-std::nan("")), "-nan");
}

TEST(GraphPrinter, FormatHexFloat) {
  EXPECT_EQ(FormatHexFloat(1.5), "0x1.8p+0");
  EXPECT_EQ(FormatHexFloat(1.0), "0x1p+0");
  EXPECT_EQ(FormatHexFloat(0.0), "0x0p+0");
  EXPECT_EQ(FormatHexFloat(-0.0), "-0x0p+0");
  EXPECT_EQ(FormatHexFloat(-0.25), "-0x1p-2");
  EXPECT_EQ(FormatHexFloat(0.1), "0x1.999999999999ap-4");
  EXPECT_EQ(FormatHexFloat(5e-324), "0x1p-1074");
  EXPECT_EQ(FormatHexFloat(0x1.8p-1070), "0x1.8p-1070");  // subnormal, normalized
  EXPECT_EQ(FormatHexFloat(DBL_MAX), "0x1.fffffffffffffp+1023");
  EXPECT_EQ(FormatHexFloat(0x1.7a3b2cp-3), "0x1.7a3b2cp-3");
  EXPECT_EQ(FormatHexFloat(-HUGE_VAL), "-inf");
  EXPECT_EQ(FormatHexFloat(std::nan("")), "nan");
}

TEST(GraphPrinter, PrintLiteral) {
  EXPECT_EQ(PrintLiteral(Literal::None()), "None");
  EXPECT_EQ(PrintLiteral(Literal::Bool(true)), "True");
  EXPECT_EQ(PrintLiteral(Literal::Int(-3)), "-3");
  EXPECT_EQ(PrintLiteral(Literal::Float(2)), "2.0");
  EXPECT_EQ(PrintLiteral(Literal::String("a\"b\\c\n\x7f\xc3\xa9")),
            "\"a\\\"b\\\\c\\n\\x7F\xc3\xa9\"");
  EXPECT_EQ(PrintLiteral(Literal::OfDType(DType::kBF16)), "bf16");
  EXPECT_EQ(PrintLiteral(Literal::Value("w.1")), "%w.1");
  EXPECT_EQ(PrintLiteral(Literal::List({Literal::Int(1), Literal::List({}), Literal::Value("a")})),
            "[1, [], %a]");
}

// A program with every double of `values` in three places: a values() payload
// (hex), fill payloads and op arguments (shortest decimal).
Program ProgramWithDoubles(const std::vector<double>& values) {
  Program p;
  Input v{"v", {DType::kF64, {static_cast<int64_t>(values.size())}}, {}, {}};
  v.payload.kind = Payload::Kind::kValues;
  v.payload.values = values;
  p.inputs.push_back(v);
  Node node;
  node.results = {"y"};
  node.op = "aten::f";
  node.args.push_back({"", Literal::Value("v")});
  for (size_t i = 0; i < values.size(); ++i) {
    Input f{"f" + std::to_string(i), {DType::kF32, {}}, {}, {}};
    f.payload.values = {values[i]};
    p.inputs.push_back(f);
    node.args.push_back({"", Literal::Float(values[i])});
  }
  p.nodes.push_back(node);
  p.outputs = {"y"};
  return p;
}

void ExpectDoublesSurvive(const std::vector<double>& values) {
  Program p = ProgramWithDoubles(values);
  ASSERT_TRUE(ValidateProgram(p).ok()) << ValidateProgram(p);
  const std::string printed = PrintProgram(p);
  auto q = ParseProgram(printed);
  ASSERT_TRUE(q.ok()) << q.status() << "\n" << printed;
  ASSERT_EQ(q->inputs.size(), values.size() + 1);
  for (size_t i = 0; i < values.size(); ++i) {
    ExpectSameDouble(values[i], q->inputs[0].payload.values[i]);
    ExpectSameDouble(values[i], q->inputs[i + 1].payload.values[0]);
    ExpectSameDouble(values[i], q->nodes[0].args[i + 1].value.f);
  }
  EXPECT_EQ(PrintProgram(*q), printed);
}

TEST(GraphPrinter, SpecialDoublesSurviveBitForBit) {
  ExpectDoublesSurvive({0.0,
                        -0.0,
                        0x1p-1074,
                        -0x1p-1074,
                        0x1p-1022,
                        0x1.fffffffffffffp-1023,
                        DBL_MAX,
                        -DBL_MAX,
                        HUGE_VAL,
                        -HUGE_VAL,
                        std::nan(""),
                        -std::nan(""),
                        1.0,
                        0.1,
                        1e-5,
                        1e23,
                        9007199254740993.0,
                        0x1.7a3b2cp-3,
                        65504.0,
                        3.3895313892515355e38,
                        FLT_MAX,
                        FLT_TRUE_MIN});
}

TEST(GraphPrinter, RandomDoublesSurviveBitForBit) {
  SplitMix64 rng(12345);
  std::vector<double> values;
  for (int i = 0; i < 2000; ++i) values.push_back(FromBits(rng.Next()));
  ExpectDoublesSurvive(values);
}

TEST(GraphPrinter, IntegerPayloadsPrintAsIntegers) {
  auto p = ParseProgram(
      "divfuzz v1\n"
      "input %a: i64[4] = values(-9223372036854775808, 9223372036854774784, -0.0, 7.0)\n"
      "input %b: u8[] = fill(255)\n"
      "input %c: bool[2] = values(True, 0)\n"
      "output %a, %b, %c\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PrintProgram(*p),
            "divfuzz v1\n"
            "input %a: i64[4] = values(-9223372036854775808, 9223372036854774784, -0x0p+0, 7)\n"
            "input %b: u8[] = fill(255)\n"
            "input %c: bool[2] = values(1, 0)\n"
            "output %a, %b, %c\n");
}

TEST(GraphPrinter, AllStringBytesSurvive) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  Program p;
  p.inputs.push_back({"x", {DType::kF32, {}}, {}, {}});
  p.inputs[0].payload.values = {1};
  p.nodes.push_back({{"y"}, "aten::f", "", {{"s", Literal::String(all)}}, {}});
  p.outputs = {"y"};
  auto q = ParseProgram(PrintProgram(p));
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->nodes[0].args[0].value.s, all);
  EXPECT_EQ(*q, p);
}

TEST(GraphPrinter, StableAfterOneParse) {
  // Non-canonical spellings converge to one text after a single parse.
  constexpr char kText[] =
      "divfuzz v1\n"
      "input   %a :f16[ 2 ,3 ]=values(1,2.50,0x1.0p0,-0,1e0,.5)\n"
      "input %b: c128[1] = fill(-2)\n"
      "%c=aten::f(%a,[ 1,2 ],x=1.,y=\"\\x41\",z=-nan)  # comment\n"
      "output %c\n";
  auto p = ParseProgram(kText);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string once = PrintProgram(*p);
  EXPECT_EQ(once,
            "divfuzz v1\n"
            "input %a: f16[2,3] = values(0x1p+0, 0x1.4p+1, 0x1p+0, -0x0p+0, 0x1p+0, 0x1p-1)\n"
            "input %b: c128[1] = fill(-2.0)\n"
            "%c = aten::f(%a, [1, 2], x=1.0, y=\"A\", z=-nan)\n"
            "output %c\n");
  auto q = ParseProgram(once);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(PrintProgram(*q), once);
  EXPECT_EQ(*q, *p);
}

TEST(GraphPrinter, ValidatorRejectsWhatWouldNotReparse) {
  Program p;
  p.inputs.push_back({"bad name", {DType::kF32, {}}, {}, {}});
  p.inputs[0].payload.values = {1};
  p.outputs = {"bad name"};
  auto s = ValidateProgram(p, "mem");
  EXPECT_EQ(s.message(), "mem: expected value name ([A-Za-z0-9_.]+), got \"bad name\"");

  Program q;
  q.inputs.push_back({"x", {DType::kF32, {}}, {}, {}});
  q.inputs[0].payload.values = {1};
  q.nodes.push_back({{"y"}, "add", "", {}, {}});
  q.outputs = {"y"};
  EXPECT_EQ(ValidateProgram(q, "mem").message(),
            "mem: expected op name 'namespace::name', got \"add\"");
  q.nodes[0].op = "aten::add";
  q.nodes[0].args = {{"alpha", Literal::Int(1)}, {"", Literal::Value("x")}};
  EXPECT_EQ(ValidateProgram(q, "mem").message(),
            "mem: expected positional arguments first, got positional argument 2 of aten::add "
            "after a named one");
  Literal deep = Literal::Int(0);
  for (int i = 0; i < 33; ++i) deep = Literal::List({deep});
  q.nodes[0].args = {{"", deep}};
  EXPECT_EQ(ValidateProgram(q, "mem").message(),
            "mem: expected list nesting depth at most 32, got deeper in argument 1 of aten::add");
  q.nodes[0].args = {{"", deep.list[0]}};
  EXPECT_TRUE(ValidateProgram(q, "mem").ok());
}

}  // namespace
}  // namespace divfuzz::graph
