// The payloads that break numerics (limits, edges, ties, dynamic, planted and
// the matrix kinds) and input layouts: syntax, round trip, errors with
// file:line:col, determinism and the properties that need no libtorch. The
// linear-algebra properties (rank by SVD, cholesky, cond) are checked with
// libtorch in exec_numeric_inputs_test.cc.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "graph/dtype.h"
#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

Program MustParse(const std::string& text) {
  absl::StatusOr<Program> p = ParseProgram(text, "t.dfz");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Program{};
}

std::string OneInput(const std::string& decl) {
  return "divfuzz v1\ninput %x: " + decl + "\n%y = aten::abs(%x)\noutput %y\n";
}

Input InputOf(const std::string& decl) {
  Program p = MustParse(OneInput(decl));
  return p.inputs.empty() ? Input{} : p.inputs[0];
}

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

TEST(GraphNumericPayloads, EveryKindRoundTripsBitForBit) {
  const std::string text =
      "divfuzz v1\n"
      "input %a: f32[40] = limits(seed=1)\n"
      "input %b: f16[7,9] layout=transposed = edges(seed=2)\n"
      "input %c: i32[33] layout=strided = ties(seed=3, distinct=4)\n"
      "input %d: bf16[2,3,4,5] layout=channels_last = dynamic(seed=4, decades=12.5)\n"
      "input %e: c64[70] = planted(seed=5)\n"
      "input %f: f64[3,4,4] = singular(seed=6)\n"
      "input %g: f32[5,3] = near_singular(seed=7)\n"
      "input %h: f64[6,4] = rank_deficient(seed=8, rank=2)\n"
      "input %i: f32[4,4] = ill_conditioned(seed=9, cond=1000.0)\n"
      "input %j: c128[3,3] = spd(seed=10)\n"
      "input %k: f64[4,6] = scaled(seed=11, decades=8.0)\n"
      "input %l: u8[0] = limits(seed=12)\n"
      "input %m: f32[] = edges(seed=13)\n"
      "%y = aten::abs(%a)\n"
      "output %y\n";
  Program p = MustParse(text);
  EXPECT_EQ(PrintProgram(p), text);
  EXPECT_EQ(MustParse(PrintProgram(p)), p);
  EXPECT_EQ(p.inputs[1].layout, Layout::kTransposed);
  EXPECT_EQ(p.inputs[3].layout, Layout::kChannelsLast);
  EXPECT_EQ(p.inputs[7].payload.a, 2);
}

TEST(GraphNumericPayloads, DefaultsAndLayoutsCompare) {
  Input a = InputOf("f32[4,4] = rank_deficient()");
  EXPECT_EQ(a.payload.a, 1);
  EXPECT_EQ(PrintPayload(a.payload, a.type.dtype), "rank_deficient(seed=0, rank=1)");
  EXPECT_EQ(PrintPayload(InputOf("f32[4,4] = ill_conditioned(seed=1)").payload, DType::kF32),
            "ill_conditioned(seed=1, cond=1e+06)");
  Input b = InputOf("f32[4,4] layout=contiguous = rank_deficient()");
  EXPECT_EQ(a, b);  // contiguous is the default, and is not printed
  b.layout = Layout::kTransposed;
  EXPECT_NE(a, b);
  b = a;
  b.payload.a = 2;
  EXPECT_NE(a, b);
}

struct BadInput {
  std::string decl;
  std::string message;
};

TEST(GraphNumericPayloads, ErrorsNameFileLineColumn) {
  const BadInput cases[] = {
      {"f32[4] layout=diagonal = normal()",
       "t.dfz:2:25: expected layout (contiguous, transposed, strided or channels_last), got "
       "'diagonal'"},
      {"f32[4] layout transposed = normal()",
       "t.dfz:2:25: expected '=' after 'layout', got 'transposed'"},
      {"f32[4] layout=transposed = normal()",
       "t.dfz:2:1: expected rank >= 2 for layout=transposed, got f32[4] for %x"},
      {"f32[4,4] layout=channels_last = normal()",
       "t.dfz:2:1: expected rank 4 for layout=channels_last, got f32[4,4] for %x"},
      {"f32[] layout=strided = normal()",
       "t.dfz:2:1: expected rank >= 1 for layout=strided, got f32[] for %x"},
      {"f32[4] = singular(seed=1)",
       "t.dfz:2:1: expected rank >= 2 for the matrix payload singular(), got f32[4] for %x"},
      {"i32[4,4] = spd(seed=1)",
       "t.dfz:2:1: expected a floating or complex dtype for spd(), got i32[4,4] for %x"},
      {"f32[4,5] = spd(seed=1)", "t.dfz:2:1: expected square matrices for spd(), got f32[4,5]"},
      {"f32[4,5] = rank_deficient(seed=1, rank=5)",
       "t.dfz:2:1: expected rank an integer in [0, 4] for f32[4,5] in rank_deficient(), got 5.0"},
      {"f32[4,5] = rank_deficient(seed=1, rank=1.5)", "expected rank an integer in [0, 4]"},
      {"f32[4,4] = ill_conditioned(seed=1, cond=0.5)",
       "t.dfz:2:1: expected cond >= 1 and finite in ill_conditioned(), got 0.5"},
      {"f32[4] = ties(seed=1, distinct=0)", "expected distinct an integer in [1, 65536]"},
      {"f32[4] = dynamic(seed=1, decades=-1)", "expected decades in [0, 1000]"},
      {"f32[4] = ties(seed=1, rank=2)",
       "t.dfz:2:33: expected parameter 'seed' or 'distinct', got 'rank'"},
      {"f32[4] = limits(seed=1, low=2)", "t.dfz:2:35: expected parameter 'seed', got 'low'"},
      {"f32[4] = spd(seed=1, seed=2)", "t.dfz:2:32: expected each parameter of 'spd' at most once"},
      {"f32[4] = chaos(seed=1)", "t.dfz:2:20: expected payload (fill, values, uniform"},
      {"f32[2048,2048] = ill_conditioned(seed=1)",
       "expected at most 67108864 for numel * min(m, n) of the matrix payload ill_conditioned()"},
  };
  for (const BadInput& c : cases) {
    absl::StatusOr<Program> p = ParseProgram(OneInput(c.decl), "t.dfz");
    ASSERT_FALSE(p.ok()) << c.decl;
    EXPECT_NE(std::string(p.status().message()).find(c.message), std::string::npos)
        << c.decl << "\n  got: " << p.status().message();
  }
}

TEST(GraphNumericPayloads, DeterministicAndSeedSensitive) {
  for (const char* decl :
       {"f32[50] = limits(seed=1)", "f16[50] = edges(seed=1)", "i64[50] = ties(seed=1, distinct=3)",
        "f64[50] = dynamic(seed=1, decades=20)", "bf16[100] = planted(seed=1)",
        "f32[2,5,5] = singular(seed=1)", "f32[5,5] = near_singular(seed=1)",
        "f32[5,6] = rank_deficient(seed=1, rank=2)", "f32[6,5] = ill_conditioned(seed=1)",
        "f32[5,5] = spd(seed=1)", "f32[5,6] = scaled(seed=1)"}) {
    Input in = InputOf(decl);
    const std::vector<double> a = MaterializePayload(in), b = MaterializePayload(in);
    ASSERT_EQ(a.size(), static_cast<size_t>(in.type.Numel())) << decl;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(Bits(a[i]), Bits(b[i])) << decl;
    in.payload.seed = 2;
    const std::vector<double> c = MaterializePayload(in);
    bool differs = false;
    for (size_t i = 0; i < a.size(); ++i) differs = differs || Bits(a[i]) != Bits(c[i]);
    EXPECT_TRUE(differs) << decl;
    for (double v : a) EXPECT_EQ(Bits(v), Bits(RoundToDType(in.type.dtype, v))) << decl;
  }
}

TEST(GraphNumericPayloads, LimitsCoverOverflowUnderflowAndIntegerLimits) {
  const std::vector<double> f32 = LimitValues(DType::kF32);
  const std::set<double> have(f32.begin(), f32.end());
  const double below_max = std::nextafterf(FLT_MAX, 0.0f);
  EXPECT_TRUE(have.count(below_max));
  EXPECT_TRUE(have.count(std::nextafterf(0x1p-126f, 0.0f)));  // largest f32 subnormal
  EXPECT_TRUE(have.count(0x1p24));                            // where x + 1 == x
  EXPECT_TRUE(have.count(RoundToDType(DType::kF32, std::log(static_cast<double>(FLT_MAX)))));
  // Every value of special() is in limits() too.
  for (double v : EdgeValues(DType::kF32)) {
    bool found = false;
    for (double w : f32) found = found || Bits(v) == Bits(w);
    EXPECT_TRUE(found) << v;
  }
  const std::vector<double> i32 = LimitValues(DType::kI32);
  const std::set<double> ints(i32.begin(), i32.end());
  for (double v : {-2147483648.0, 2147483647.0, 1073741823.0, 46340.0, 46341.0, 16777217.0}) {
    EXPECT_TRUE(ints.count(v)) << v;
  }
  for (double v : LimitValues(DType::kU8)) EXPECT_TRUE(v >= 0 && v <= 255) << v;
  // The generator draws them: a large f16 tensor holds inf and the value below max.
  std::set<uint64_t> seen;
  for (double v : MaterializePayload(InputOf("f16[4000] = limits(seed=3)"))) seen.insert(Bits(v));
  EXPECT_TRUE(seen.count(Bits(65504.0 - 32)));
  EXPECT_TRUE(seen.count(Bits(HUGE_VAL)));
}

TEST(GraphNumericPayloads, EdgesSitAtAndBesideDomainEdges) {
  const std::vector<double> v = MaterializePayload(InputOf("f32[4000] = edges(seed=5)"));
  const float half_pi = static_cast<float>(3.141592653589793 / 2);
  int at_one = 0, beside_one = 0, at_half_pi = 0;
  for (double x : v) {
    at_one += x == 1.0;
    beside_one += x == std::nextafter(1.0f, 2.0f) || x == std::nextafter(1.0f, 0.0f);
    at_half_pi += x == half_pi;
  }
  EXPECT_GT(at_one, 10);
  EXPECT_GT(beside_one, 5);
  EXPECT_GT(at_half_pi, 10);
}

TEST(GraphNumericPayloads, TiesAndDynamicRange) {
  const std::vector<double> t = MaterializePayload(InputOf("f32[500] = ties(seed=1, distinct=3)"));
  EXPECT_LE(std::set<double>(t.begin(), t.end()).size(), 3u);
  const std::vector<double> d =
      MaterializePayload(InputOf("f64[2000] = dynamic(seed=1, decades=20)"));
  double lo = HUGE_VAL, hi = 0;
  for (double x : d) lo = std::min(lo, std::fabs(x)), hi = std::max(hi, std::fabs(x));
  EXPECT_LT(lo, 1e-8);
  EXPECT_GT(hi, 1e8);
  EXPECT_LE(hi, 1e10);
  // Clipped to the dtype: f16 stays finite and normal.
  for (double x : MaterializePayload(InputOf("f16[2000] = dynamic(seed=1, decades=40)"))) {
    EXPECT_TRUE(std::isfinite(x) && std::fabs(x) >= 0x1p-14) << x;
  }
}

// planted(): for every vector chunk a limit value in the body and in the tail.
TEST(GraphNumericPayloads, PlantedHitsVectorBodiesAndTails) {
  const std::vector<double> limits = LimitValues(DType::kF32);
  const std::set<uint64_t> table = [&] {
    std::set<uint64_t> s;
    for (double v : limits) s.insert(Bits(v));
    return s;
  }();
  EXPECT_EQ(VectorChunks(DType::kF32), (std::vector<int64_t>{8, 16, 32}));
  EXPECT_EQ(VectorChunks(DType::kU8), (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(VectorChunks(DType::kC128), (std::vector<int64_t>{2, 4, 8}));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Input in = InputOf("f32[101] = planted(seed=0)");  // 3 * 32 + 5
    in.payload.seed = seed;
    const std::vector<double> v = MaterializePayload(in);
    for (int64_t chunk : VectorChunks(DType::kF32)) {
      const int64_t body = 101 - 101 % chunk;
      bool in_body = false, in_tail = false;
      for (int64_t i = 0; i < 101; ++i) {
        // A normal draw can equal a table value (1.0, 0.5) only by chance.
        const bool planted = table.count(Bits(v[i])) && std::fabs(v[i]) != 1 && v[i] != 0.5;
        (i < body ? in_body : in_tail) |= planted;
      }
      // A later chunk may overwrite an earlier plant; the largest chunk never is.
      if (chunk == 32) {
        EXPECT_TRUE(in_body) << seed;
        EXPECT_TRUE(in_tail) << seed;
      }
    }
  }
}

TEST(GraphNumericPayloads, SingularLinesAreExactMultiples) {
  for (const char* decl : {"f32[3,5,5] = singular(seed=4)", "f16[4,7] = singular(seed=5)",
                           "bf16[7,4] = singular(seed=6)", "f64[1,6] = singular(seed=7)"}) {
    Input in = InputOf(decl);
    const std::vector<double> v = MaterializePayload(in);
    const int64_t m = in.type.shape[in.type.shape.size() - 2], n = in.type.shape.back();
    for (size_t b = 0; b < v.size() / (m * n); ++b) {
      const double* a = v.data() + b * m * n;
      // Some pair of rows (or columns) is c times the other, c a power of two.
      bool found = false;
      for (int rows = 0; rows < 2; ++rows) {
        const int64_t count = rows ? m : n, len = rows ? n : m;
        const auto at = [&](int64_t line, int64_t i) {
          return rows ? a[line * n + i] : a[i * n + line];
        };
        for (int64_t r = 0; r < count; ++r) {
          bool zero = true;
          for (int64_t i = 0; i < len; ++i) zero = zero && at(r, i) == 0;
          found = found || (zero && count == 1);
          for (int64_t q = 0; q < count; ++q) {
            if (q == r || at(q, 0) == 0) continue;
            const double c = at(r, 0) / at(q, 0);
            bool multiple = std::fabs(c) == 1 || std::fabs(c) == 2 || std::fabs(c) == 0.5;
            for (int64_t i = 0; i < len; ++i) multiple = multiple && at(r, i) == c * at(q, i);
            found = found || multiple;
          }
        }
      }
      EXPECT_TRUE(found) << decl << " batch " << b;
    }
  }
}

TEST(GraphNumericPayloads, SpdIsSymmetric) {
  Input in = InputOf("f16[2,6,6] = spd(seed=1)");
  const std::vector<double> v = MaterializePayload(in);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 6; ++j) EXPECT_EQ(v[b * 36 + i * 6 + j], v[b * 36 + j * 6 + i]);
    }
  }
}

TEST(GraphNumericPayloads, ScaledSpansManyOrdersButStaysFinite) {
  const std::vector<double> v =
      MaterializePayload(InputOf("f32[16,16] = scaled(seed=2, decades=12)"));
  double lo = HUGE_VAL, hi = 0;
  for (double x : v) {
    ASSERT_TRUE(std::isfinite(x));
    if (x != 0) lo = std::min(lo, std::fabs(x)), hi = std::max(hi, std::fabs(x));
  }
  EXPECT_GT(hi / lo, 1e12);
  for (double x : MaterializePayload(InputOf("f16[16,16] = scaled(seed=2, decades=30)"))) {
    EXPECT_TRUE(std::isfinite(x));
  }
}

TEST(GraphNumericPayloads, ComplexMatricesAreRealParts) {
  const std::vector<double> v = MaterializePayload(InputOf("c64[4,4] = spd(seed=1)"));
  ASSERT_EQ(v.size(), 32u);
  for (size_t i = 1; i < v.size(); i += 2) EXPECT_EQ(v[i], 0.0);
  EXPECT_EQ(v[0 * 2], v[0 * 2]);
  EXPECT_EQ(v[(0 * 4 + 1) * 2], v[(1 * 4 + 0) * 2]);
}

TEST(GraphNumericPayloads, EmptyAndScalarInputs) {
  EXPECT_TRUE(MaterializePayload(InputOf("f32[0,4,4] = spd(seed=1)")).empty());
  EXPECT_TRUE(MaterializePayload(InputOf("f32[3,0,2] = singular(seed=1)")).empty());
  EXPECT_TRUE(MaterializePayload(InputOf("f32[0] = planted(seed=1)")).empty());
  EXPECT_EQ(MaterializePayload(InputOf("f32[] = planted(seed=1)")).size(), 1u);
  EXPECT_EQ(MaterializePayload(InputOf("bool[] = limits(seed=1)")).size(), 1u);
}

}  // namespace
}  // namespace divfuzz::graph
