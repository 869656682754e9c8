// The .dfz parser: the full syntax, the canonical round trip, and one test per
// error with its exact location and wording.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

constexpr char kFullProgram[] = R"(
# a comment before the header
divfuzz v1
input %x: f32[4,8] = fill(0.4033372700214386)   # trailing comment
input %w1: f32[2,2] = values(0x1.7a3b2cp-3, -0x1.0p-2, inf, -inf)
input %w2: f64[6] = values(nan, -0.0, 0x1p-1074, -0x1P-1074, 1.5, 0x1.fffffffffffffp+1023)
input %b1: f32[16] = uniform(seed=3, low=-0.35, high=0.35)
input %m: f64[3,3] = special(seed=9)
input %n: f32[] = normal(mean=0, std=1, seed=18446744073709551615)
input %c: c64[2] = values(1, 2, -3.5, 0x1p-149)
input %i: i64[3] = values(-9223372036854775808, 0, 42)
input %bb: bool[2] = fill(True)

%y = aten::linear(%x, %w1, %b1)
%z = aten::add.Scalar(%y, 2, alpha=-1.5e-3)
%s, %l = aten::slogdet(%m)
%t = aten::sum.dim_IntList(%z, [0, -1], keepdim=False, dtype=f64)
%q.1 = aten::foo(%t, [[1, 2], [], [%s, %l]], "a \"q\" \\ b\x01", None, inf, -inf, nan, -0.0, 0x1p-3, 1e300, true)
output %t, %l, %q.1
)";

constexpr char kFullCanonical[] =
    "divfuzz v1\n"
    "input %x: f32[4,8] = fill(0.4033372700214386)\n"
    "input %w1: f32[2,2] = values(0x1.7a3b2cp-3, -0x1p-2, inf, -inf)\n"
    "input %w2: f64[6] = values(nan, -0x0p+0, 0x1p-1074, -0x1p-1074, 0x1.8p+0, "
    "0x1.fffffffffffffp+1023)\n"
    "input %b1: f32[16] = uniform(seed=3, low=-0.35, high=0.35)\n"
    "input %m: f64[3,3] = special(seed=9)\n"
    "input %n: f32[] = normal(seed=18446744073709551615, mean=0.0, std=1.0)\n"
    "input %c: c64[2] = values(0x1p+0, 0x1p+1, -0x1.cp+1, 0x1p-149)\n"
    "input %i: i64[3] = values(-9223372036854775808, 0, 42)\n"
    "input %bb: bool[2] = fill(1)\n"
    "%y = aten::linear(%x, %w1, %b1)\n"
    "%z = aten::add.Scalar(%y, 2, alpha=-0.0015)\n"
    "%s, %l = aten::slogdet(%m)\n"
    "%t = aten::sum.dim_IntList(%z, [0, -1], keepdim=False, dtype=f64)\n"
    "%q.1 = aten::foo(%t, [[1, 2], [], [%s, %l]], \"a \\\"q\\\" \\\\ b\\x01\", None, inf, -inf, "
    "nan, -0.0, 0.125, 1e+300, True)\n"
    "output %t, %l, %q.1\n";

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

TEST(GraphParser, FullProgramParses) {
  auto p = ParseProgram(kFullProgram, "full.dfz");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->inputs.size(), 9u);
  ASSERT_EQ(p->nodes.size(), 5u);

  const Input& x = p->inputs[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, (TensorType{DType::kF32, {4, 8}}));
  EXPECT_EQ(x.payload.kind, Payload::Kind::kFill);
  EXPECT_EQ(x.payload.values, std::vector<double>{0.4033372700214386});
  EXPECT_EQ(x.loc.line, 4);
  EXPECT_EQ(x.loc.col, 1);

  const std::vector<double>& w2 = p->inputs[2].payload.values;
  ASSERT_EQ(w2.size(), 6u);
  EXPECT_TRUE(std::isnan(w2[0]));
  EXPECT_EQ(Bits(w2[1]), Bits(-0.0));
  EXPECT_EQ(w2[2], 0x1p-1074);
  EXPECT_EQ(w2[3], -0x1p-1074);
  EXPECT_EQ(w2[5], 0x1.fffffffffffffp+1023);

  const Payload& b1 = p->inputs[3].payload;
  EXPECT_EQ(b1.kind, Payload::Kind::kUniform);
  EXPECT_EQ(b1.seed, 3u);
  EXPECT_EQ(b1.a, -0.35);
  EXPECT_EQ(b1.b, 0.35);
  EXPECT_EQ(p->inputs[5].type.shape, std::vector<int64_t>{});
  EXPECT_EQ(p->inputs[5].payload.seed, 18446744073709551615u);
  EXPECT_EQ(p->inputs[7].payload.values[0], -0x1p63);

  const Node& z = p->nodes[1];
  EXPECT_EQ(z.op, "aten::add");
  EXPECT_EQ(z.overload, "Scalar");
  EXPECT_EQ(z.QualifiedName(), "aten::add.Scalar");
  EXPECT_EQ(z.loc.line, 15);
  ASSERT_EQ(z.args.size(), 3u);
  EXPECT_EQ(z.args[1].value, Literal::Int(2));
  EXPECT_EQ(z.args[2].name, "alpha");
  EXPECT_EQ(z.args[2].value, Literal::Float(-1.5e-3));

  EXPECT_EQ(p->nodes[2].results, (std::vector<std::string>{"s", "l"}));
  const Node& t = p->nodes[3];
  EXPECT_EQ(t.args[1].value, Literal::List({Literal::Int(0), Literal::Int(-1)}));
  EXPECT_EQ(t.args[2].value, Literal::Bool(false));
  EXPECT_EQ(t.args[3].value, Literal::OfDType(DType::kF64));

  const Node& q = p->nodes[4];
  EXPECT_EQ(q.args[2].value, Literal::String("a \"q\" \\ b\x01"));
  EXPECT_EQ(q.args[3].value, Literal::None());
  EXPECT_EQ(q.args[4].value.f, HUGE_VAL);
  EXPECT_EQ(q.args[5].value.f, -HUGE_VAL);
  EXPECT_TRUE(std::isnan(q.args[6].value.f));
  EXPECT_EQ(q.args[7].value, Literal::Float(-0.0));
  EXPECT_NE(q.args[7].value, Literal::Float(0.0));
  EXPECT_EQ(q.args[8].value, Literal::Float(0.125));
  EXPECT_EQ(p->outputs, (std::vector<std::string>{"t", "l", "q.1"}));
  EXPECT_EQ(p->output_loc.line, 19);
}

TEST(GraphParser, CanonicalPrintAndRoundTrip) {
  auto p = ParseProgram(kFullProgram);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string printed = PrintProgram(*p);
  EXPECT_EQ(printed, kFullCanonical);
  auto q = ParseProgram(printed);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, *p);  // bit for bit, NaN included (the parser's NaN is canonical)
  EXPECT_EQ(PrintProgram(*q), printed);
}

TEST(GraphParser, DesignExampleParses) {
  // docs/DESIGN.md's example, with the elided weights filled in.
  constexpr char kText[] =
      "divfuzz v1\n"
      "input %x: f32[4,8] = fill(0.4033372700214386)\n"
      "input %w1: f32[2,8] = values(0x1.7a3b2cp-3, -0x1.0p-2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
      "0, 0, inf)\n"
      "input %b1: f32[2] = uniform(seed=3, low=-0.35, high=0.35)\n"
      "input %w2: f32[2,2] = special(seed=9)\n"
      "input %b2: f32[2] = normal(seed=1)\n"
      "%y = aten::linear(%x, %w1, %b1)\n"
      "%z = aten::add.Scalar(%y, 2)\n"
      "%v = aten::arccosh(%z)\n"
      "%u = aten::linear(%v, %w2, %b2)\n"
      "%d = aten::logdet(%u)\n"
      "%r = aten::reciprocal(%u)\n"
      "output %d, %r\n";
  auto p = ParseProgram(kText);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->inputs[4].payload.a, 0.0);  // normal defaults
  EXPECT_EQ(p->inputs[4].payload.b, 1.0);
  const std::string once = PrintProgram(*p);
  auto q = ParseProgram(once);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(PrintProgram(*q), once);
}

TEST(GraphParser, LenientSpellings) {
  // CRLF line ends, tabs, no final newline, hex ints, '+' signs, lower-case bools.
  auto p = ParseProgram(
      "divfuzz v1\r\ninput %a: i32[2] = values(0x10, +3)\r\n%b =\taten::f(%a, 0x1F, +1.5, false)"
      "\r\noutput %b");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->inputs[0].payload.values, (std::vector<double>{16, 3}));
  EXPECT_EQ(p->nodes[0].args[1].value, Literal::Int(31));
  EXPECT_EQ(p->nodes[0].args[2].value, Literal::Float(1.5));
  EXPECT_EQ(p->nodes[0].args[3].value, Literal::Bool(false));
}

// Issue 20: NaN and Inf (as Python and C print them) are accepted in any case,
// with a sign, in payload values, parameters and node arguments.
TEST(GraphParser, NanAndInfInAnyCase) {
  auto p = ParseProgram(
      "divfuzz v1\ninput %a: f32[6] = values(NaN, Inf, -Inf, +INF, NAN, -nan)\n"
      "input %b: f32[] = fill(-Infinity_is_not_a_spelling)\noutput %a\n");
  ASSERT_FALSE(p.ok());  // the one spelling left out
  p = ParseProgram(
      "divfuzz v1\ninput %a: f32[6] = values(NaN, Inf, -Inf, +INF, NAN, -nan)\n"
      "input %n: f32[] = normal(mean=0, std=1)\n"
      "%b = aten::clamp(%a, min=-INF, max=Inf)\n%c = aten::f(%n, NaN, [-Inf, iNf])\n"
      "output %b, %c\n");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::vector<double>& v = p->inputs[0].payload.values;
  ASSERT_EQ(v.size(), 6u);
  EXPECT_TRUE(std::isnan(v[0]) && !std::signbit(v[0]));
  EXPECT_EQ(v[1], HUGE_VAL);
  EXPECT_EQ(v[2], -HUGE_VAL);
  EXPECT_EQ(v[3], HUGE_VAL);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(std::isnan(v[5]) && std::signbit(v[5]));
  EXPECT_EQ(p->nodes[0].args[1].value, Literal::Float(-HUGE_VAL));
  EXPECT_EQ(p->nodes[0].args[2].value, Literal::Float(HUGE_VAL));
  EXPECT_TRUE(std::isnan(p->nodes[1].args[1].value.f));
  EXPECT_EQ(p->nodes[1].args[2].value.list[1], Literal::Float(HUGE_VAL));
  // The canonical spellings come back out.
  EXPECT_NE(PrintProgram(*p).find("values(nan, inf, -inf, inf, nan, -nan)"), std::string::npos)
      << PrintProgram(*p);
}

TEST(GraphParser, IntegerLimits) {
  auto p = ParseProgram(
      "divfuzz v1\ninput %a: f32[] = fill(1)\n"
      "%b = aten::f(%a, -9223372036854775808, 9223372036854775807)\noutput %b\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->nodes[0].args[1].value.i, INT64_MIN);
  EXPECT_EQ(p->nodes[0].args[2].value.i, INT64_MAX);
}

TEST(GraphParser, NestingUpToTheLimit) {
  std::string deep = std::string(32, '[') + std::string(32, ']');
  auto ok = ParseProgram("divfuzz v1\ninput %a: f32[] = fill(1)\n%b = aten::f(" + deep +
                         ")\noutput %b\n");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

const std::string kHead = "divfuzz v1\ninput %x: f32[2] = fill(1)\n";

class GraphParserError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(GraphParserError, ExactMessage) {
  const ErrorCase& c = GetParam();
  auto p = ParseProgram(c.text, "t.dfz");
  ASSERT_FALSE(p.ok()) << c.name;
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), c.message) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    All, GraphParserError,
    ::testing::Values(
        ErrorCase{"empty", "", "t.dfz:1:1: expected 'divfuzz v1' header, got end of file"},
        ErrorCase{"missing_header", "input %x: f32[] = fill(1)\noutput %x\n",
                  "t.dfz:1:1: expected 'divfuzz v1' header, got 'input'"},
        ErrorCase{"bad_version", "divfuzz v2\n",
                  "t.dfz:1:9: expected format version 'v1' after 'divfuzz', got 'v2'"},
        ErrorCase{"bad_dtype", "divfuzz v1\ninput %x: f33[2] = fill(1)\noutput %x\n",
                  "t.dfz:2:11: expected dtype (f16, bf16, f32, f64, c64, c128, i8, i16, i32, "
                  "i64, u8, bool), got 'f33'"},
        ErrorCase{"shape_missing_comma", "divfuzz v1\ninput %x: f32[2 3] = fill(1)\n",
                  "t.dfz:2:17: expected ']' after shape dimensions, got '3'"},
        ErrorCase{"float_dimension", "divfuzz v1\ninput %x: f32[2.5] = fill(1)\n",
                  "t.dfz:2:15: expected integer dimension, got '2.5'"},
        ErrorCase{"unterminated_list", kHead + "%y = aten::sum(%x, [0, 1\noutput %y\n",
                  "t.dfz:3:25: expected ',' or ']' after a list element, got end of line"},
        ErrorCase{"unknown_payload", "divfuzz v1\ninput %x: f32[2] = zeros()\n",
                  "t.dfz:2:20: expected payload (fill, values, uniform, normal, special, limits, "
                  "edges, ties, dynamic, planted, singular, near_singular, rank_deficient, "
                  "ill_conditioned, spd or scaled), got 'zeros'"},
        ErrorCase{"unknown_generator_param",
                  "divfuzz v1\ninput %x: f32[2] = uniform(seed=1, lo=0)\n",
                  "t.dfz:2:36: expected parameter 'seed', 'low' or 'high', got 'lo'"},
        ErrorCase{"negative_seed", "divfuzz v1\ninput %x: f32[2] = special(seed=-1)\n",
                  "t.dfz:2:33: expected seed (an integer in [0, 18446744073709551615]), got "
                  "'-1'"},
        ErrorCase{"duplicate_name", kHead + "input %x: f32[2] = fill(2)\noutput %x\n",
                  "t.dfz:3:1: expected a new value name, got %x (already defined at line 2)"},
        ErrorCase{"duplicate_result", kHead + "%y, %y = aten::f(%x)\noutput %y\n",
                  "t.dfz:3:1: expected a new value name, got %y (already defined at line 3)"},
        ErrorCase{"undefined_ref", kHead + "%y = aten::neg(%w)\noutput %y\n",
                  "t.dfz:3:1: expected a value defined before use, got %w in argument 1 of "
                  "aten::neg"},
        ErrorCase{"undefined_ref_in_list", kHead + "%y = aten::cat([%x, %v], dim=0)\noutput %y\n",
                  "t.dfz:3:1: expected a value defined before use, got %v in argument 1 of "
                  "aten::cat"},
        ErrorCase{"values_count", "divfuzz v1\ninput %x: f32[2,2] = values(1, 2, 3)\noutput %x\n",
                  "t.dfz:2:1: expected 4 values for f32[2,2], got 3"},
        ErrorCase{"complex_values_count",
                  "divfuzz v1\ninput %x: c64[2] = values(1, 2)\noutput %x\n",
                  "t.dfz:2:1: expected 4 values (re, im pairs) for c64[2], got 2"},
        ErrorCase{"absurd_shape", "divfuzz v1\ninput %x: f32[100000,100000] = fill(0)\noutput %x\n",
                  "t.dfz:2:1: absurd shape f32[100000,100000] for %x (10000000000 elements) "
                  "exceeds the 16777216-element limit"},
        ErrorCase{"rank", "divfuzz v1\ninput %x: f32[1,1,1,1,1,1,1,1,1] = fill(0)\noutput %x\n",
                  "t.dfz:2:1: expected rank at most 8, got rank 9 for %x"},
        ErrorCase{"negative_dim", "divfuzz v1\ninput %x: f32[2,-1] = fill(0)\noutput %x\n",
                  "t.dfz:2:1: expected non-negative dimensions, got f32[2,-1] for %x"},
        ErrorCase{"missing_output", kHead,
                  "t.dfz:3:1: expected 'output' statement, got end of file"},
        ErrorCase{"undefined_output", kHead + "output %x, %q\n",
                  "t.dfz:3:1: expected a defined value in the output statement, got %q"},
        ErrorCase{"after_output", kHead + "output %x\ninput %z: f32[] = fill(0)\n",
                  "t.dfz:4:1: expected end of file after the output statement, got 'input'"},
        ErrorCase{"bad_hex_float", "divfuzz v1\ninput %x: f32[2] = values(0x1.gp3, 1)\n",
                  "t.dfz:2:27: expected hex float like 0x1.8p-3, got '0x1.gp3'"},
        ErrorCase{"hex_float_no_exponent_digits", kHead + "%y = aten::f(%x, 0x1p)\noutput %y\n",
                  "t.dfz:3:18: expected hex float like 0x1.8p-3, got '0x1p'"},
        ErrorCase{"float_out_of_range", kHead + "%y = aten::f(%x, 1e400)\noutput %y\n",
                  "t.dfz:3:18: float literal out of range: expected a value in double range, "
                  "got '1e400'"},
        ErrorCase{"integer_out_of_range",
                  kHead + "%y = aten::add.Scalar(%x, 99999999999999999999)\noutput %y\n",
                  "t.dfz:3:27: integer literal out of range: expected a value in int64 range, "
                  "got '99999999999999999999'"},
        ErrorCase{"int64_max_plus_one", kHead + "%y = aten::f(%x, 9223372036854775808)\n",
                  "t.dfz:3:18: integer literal out of range: expected a value in int64 range, "
                  "got '9223372036854775808'"},
        ErrorCase{"garbage_bytes", std::string("divfuzz v1\n\x01\x02\xff", 14),
                  "t.dfz:2:1: expected statement ('input', 'output' or '%name = op(...)'), got "
                  "'\\x01'"},
        ErrorCase{"embedded_nul", std::string("divfuzz v1\0\n", 12),
                  "t.dfz:1:11: expected end of line, got '\\x00'"},
        ErrorCase{"op_without_namespace", kHead + "%y = neg(%x)\noutput %y\n",
                  "t.dfz:3:9: expected '::' in the op name (like 'aten::add'), got '('"},
        ErrorCase{"positional_after_named", kHead + "%y = aten::f(%x, dim=1, 2)\noutput %y\n",
                  "t.dfz:3:25: expected named argument 'name=value' (positional arguments come "
                  "first), got '2'"},
        ErrorCase{"duplicate_named", kHead + "%y = aten::f(%x, dim=1, dim=2)\noutput %y\n",
                  "t.dfz:3:1: expected distinct argument names, got 'dim' twice in aten::f"},
        ErrorCase{"unterminated_string", kHead + "%y = aten::f(%x, \"abc\noutput %y\n",
                  "t.dfz:3:22: expected '\"' to close the string, got end of line"},
        ErrorCase{"bad_escape", kHead + "%y = aten::f(%x, \"a\\qb\")\n",
                  "t.dfz:3:20: expected escape (\\\" \\\\ \\n \\t \\r \\xHH), got '\\q'"},
        ErrorCase{"empty_name", kHead + "% = aten::f(%x)\n",
                  "t.dfz:3:2: expected value name ([A-Za-z0-9_.]+) after '%', got ' '"},
        ErrorCase{"too_deep", kHead + "%y = aten::f(" + std::string(40, '[') + "\n",
                  "t.dfz:3:46: expected list nesting depth at most 32, got '['"},
        ErrorCase{"int_out_of_i8_range",
                  "divfuzz v1\ninput %x: i8[2] = values(1, 300)\noutput %x\n",
                  "t.dfz:2:1: expected integral values in [-128, 127] for i8, got 300.0 at "
                  "element 1"},
        ErrorCase{"fractional_int", "divfuzz v1\ninput %x: i32[] = fill(1.5)\noutput %x\n",
                  "t.dfz:2:1: expected integral values in [-2147483648, 2147483647] for i32, "
                  "got 1.5 at element 0"},
        ErrorCase{"bool_two", "divfuzz v1\ninput %x: bool[2] = values(0, 2)\noutput %x\n",
                  "t.dfz:2:1: expected integral values in {0, 1} for bool, got 2.0 at element 1"},
        ErrorCase{"uniform_bounds",
                  "divfuzz v1\ninput %x: f32[2] = uniform(seed=1, low=1, high=0)\noutput %x\n",
                  "t.dfz:2:1: expected finite uniform bounds with low <= high, got low=1.0, "
                  "high=0.0"},
        ErrorCase{"infinity_payload", "divfuzz v1\ninput %x: f32[] = fill(Infinity)\n",
                  "t.dfz:2:24: expected number (like 12, -1.5e3, 0x1f, 0x1.8p-3, inf, -inf or "
                  "nan; inf and nan in any case), got 'Infinity'"},
        ErrorCase{"minus_infinity_argument", kHead + "%y = aten::f(%x, -Infinity)\n",
                  "t.dfz:3:18: expected number (like 12, -1.5e3, 0x1f, 0x1.8p-3, inf, -inf or "
                  "nan; inf and nan in any case), got '-Infinity'"},
        ErrorCase{"nan_word_argument", kHead + "%y = aten::f(%x, NotANumber)\n",
                  "t.dfz:3:18: expected argument value (number like 12, -1.5e3, 0x1f, "
                  "0x1.8p-3, inf, -inf or nan; inf and nan in any case; True, False, None, "
                  "string, dtype, %name or list), got 'NotANumber'"},
        ErrorCase{"normal_std", "divfuzz v1\ninput %x: f32[2] = normal(std=-1)\noutput %x\n",
                  "t.dfz:2:1: expected finite mean and std >= 0, got mean=0.0, std=-1.0"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(GraphParser, SeedCorpusIsValid) {
  // corpus/parser/*.dfz seed the fuzzers and document the format by example.
  const auto dir = std::filesystem::path(DIVFUZZ_SOURCE_DIR) / "corpus/parser";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream file(entry.path(), std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    auto p = ParseProgram(text.str(), entry.path().filename().string());
    ASSERT_TRUE(p.ok()) << p.status();
    auto q = ParseProgram(PrintProgram(*p));
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(*q, *p) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(GraphParser, NeverCrashesOnPrefixes) {
  // Every prefix of a valid program is either valid or a clean error.
  const std::string text = kFullCanonical;
  for (size_t n = 0; n <= text.size(); ++n) {
    auto p = ParseProgram(text.substr(0, n), "p.dfz");
    if (!p.ok()) {
      EXPECT_EQ(p.status().message().substr(0, 6), "p.dfz:") << n;
    }
  }
}

}  // namespace
}  // namespace divfuzz::graph
