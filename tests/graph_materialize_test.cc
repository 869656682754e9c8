// Payload generators and dtype arithmetic: determinism, ranges, and the edge
// values of every dtype.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>

#include "graph/dtype.h"
#include "graph/materialize.h"
#include "graph/rng.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

Input MakeInput(DType dtype, std::vector<int64_t> shape, Payload::Kind kind, uint64_t seed = 0,
                double a = 0, double b = 1) {
  Input in;
  in.name = "x";
  in.type = {dtype, std::move(shape)};
  in.payload.kind = kind;
  in.payload.seed = seed;
  in.payload.a = a;
  in.payload.b = b;
  return in;
}

TEST(GraphDType, NamesRoundTrip) {
  for (DType d : kAllDTypes) EXPECT_EQ(ParseDType(DTypeName(d)), d);
  EXPECT_EQ(ParseDType("f8"), std::nullopt);
  EXPECT_EQ(ParseDType(""), std::nullopt);
}

TEST(GraphDType, Limits) {
  EXPECT_EQ(Epsilon(DType::kF16), 0x1p-10);
  EXPECT_EQ(Epsilon(DType::kBF16), 0x1p-7);
  EXPECT_EQ(Epsilon(DType::kF32), 0x1p-23);
  EXPECT_EQ(Epsilon(DType::kC128), 0x1p-52);
  EXPECT_EQ(Epsilon(DType::kI32), 0);
  EXPECT_EQ(MaxFinite(DType::kF16), 65504);
  EXPECT_EQ(MaxFinite(DType::kBF16), 3.3895313892515355e38);
  EXPECT_EQ(MaxFinite(DType::kC64), FLT_MAX);
  EXPECT_EQ(MaxFinite(DType::kF64), DBL_MAX);
  EXPECT_EQ(MaxFinite(DType::kI8), 127);
  EXPECT_EQ(MaxFinite(DType::kU8), 255);
  EXPECT_EQ(MaxFinite(DType::kBool), 1);
  EXPECT_EQ(MinValue(DType::kI16), -32768);
  EXPECT_EQ(MinValue(DType::kF16), -65504);
  EXPECT_EQ(MinValue(DType::kU8), 0);
  EXPECT_EQ(DenormMin(DType::kF16), 0x1p-24);
  EXPECT_EQ(DenormMin(DType::kBF16), 0x1p-133);
  EXPECT_EQ(DenormMin(DType::kF32), 0x1p-149);
  EXPECT_EQ(DenormMin(DType::kF64), 0x1p-1074);
  EXPECT_EQ(SmallestNormal(DType::kF16), 0x1p-14);
  EXPECT_EQ(SmallestNormal(DType::kBF16), 0x1p-126);
  EXPECT_EQ(SmallestNormal(DType::kF64), 0x1p-1022);
  EXPECT_TRUE(IsFloating(DType::kBF16));
  EXPECT_TRUE(IsComplex(DType::kC64));
  EXPECT_TRUE(IsIntegral(DType::kU8));
  EXPECT_FALSE(IsIntegral(DType::kBool));
}

TEST(GraphDType, FitsIntegralDType) {
  EXPECT_TRUE(FitsIntegralDType(DType::kI8, -128));
  EXPECT_FALSE(FitsIntegralDType(DType::kI8, 128));
  EXPECT_FALSE(FitsIntegralDType(DType::kI32, 0.5));
  EXPECT_FALSE(FitsIntegralDType(DType::kI32, std::nan("")));
  EXPECT_TRUE(FitsIntegralDType(DType::kI64, -0x1p63));
  EXPECT_FALSE(FitsIntegralDType(DType::kI64, 0x1p63));  // = MaxFinite(kI64) as a double
  EXPECT_TRUE(FitsIntegralDType(DType::kI64, 0x1p63 - 1024));
  EXPECT_FALSE(FitsIntegralDType(DType::kBool, 2));
  EXPECT_FALSE(FitsIntegralDType(DType::kF32, 1));
}

TEST(GraphDType, RoundToDType) {
  // f16: ties to even, overflow past max + half an ulp, subnormals.
  EXPECT_EQ(RoundToDType(DType::kF16, 65519), 65504);
  EXPECT_EQ(RoundToDType(DType::kF16, 65520), HUGE_VAL);
  EXPECT_EQ(RoundToDType(DType::kF16, -1e10), -HUGE_VAL);
  EXPECT_EQ(RoundToDType(DType::kF16, 0x1p-25), 0);
  EXPECT_EQ(RoundToDType(DType::kF16, 3 * 0x1p-26), 0x1p-24);
  EXPECT_EQ(RoundToDType(DType::kF16, 1 + 0x1p-11), 1);
  EXPECT_EQ(RoundToDType(DType::kF16, 1 + 3 * 0x1p-11), 1 + 0x1p-9);
  EXPECT_EQ(Bits(RoundToDType(DType::kF16, -0x1p-30)), Bits(-0.0));
  EXPECT_EQ(RoundToDType(DType::kBF16, 1 + 0x1p-8), 1);
  EXPECT_EQ(RoundToDType(DType::kBF16, 0x1p-134), 0);
  EXPECT_TRUE(std::isnan(RoundToDType(DType::kF32, std::nan(""))));
  // f32 agrees with the hardware conversion wherever that is defined.
  SplitMix64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    double v = std::ldexp(rng.Uniform01() - 0.5, static_cast<int>(rng.NextBelow(300)) - 150);
    EXPECT_EQ(RoundToDType(DType::kF32, v), static_cast<double>(static_cast<float>(v))) << v;
  }
  EXPECT_EQ(RoundToDType(DType::kI8, 1e9), 127);
  EXPECT_EQ(RoundToDType(DType::kI8, 2.5), 2);
  EXPECT_EQ(RoundToDType(DType::kU8, -3), 0);
  EXPECT_EQ(RoundToDType(DType::kI32, std::nan("")), 0);
  EXPECT_EQ(RoundToDType(DType::kI64, 1e30), 0x1p63 - 1024);
  EXPECT_EQ(RoundToDType(DType::kBool, 0.25), 1);
  EXPECT_EQ(RoundToDType(DType::kBool, 0), 0);
}

TEST(GraphRng, SplitMix64) {
  SplitMix64 rng(0);
  EXPECT_EQ(rng.Next(), 0xe220a8397b1dcdafULL);  // the reference sequence
  EXPECT_EQ(rng.Next(), 0x6e789e6aa1b965f4ULL);
  SplitMix64 r2(1);
  for (int i = 0; i < 1000; ++i) {
    double u = r2.Uniform01();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(r2.NextBelow(7), 7u);
  }
  EXPECT_EQ(r2.NextBelow(0), 0u);
  EXPECT_EQ(r2.NextBelow(1), 0u);
}

TEST(GraphMaterialize, Deterministic) {
  for (auto kind : {Payload::Kind::kUniform, Payload::Kind::kNormal, Payload::Kind::kSpecial}) {
    Input a = MakeInput(DType::kF32, {64}, kind, 42, -1, 1);
    std::vector<double> x = MaterializePayload(a), y = MaterializePayload(a);
    ASSERT_EQ(x.size(), 64u);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(Bits(x[i]), Bits(y[i]));
    a.payload.seed = 43;
    std::vector<double> z = MaterializePayload(a);
    size_t same = 0;
    for (size_t i = 0; i < x.size(); ++i) same += Bits(x[i]) == Bits(z[i]);
    EXPECT_LT(same, 40u);  // special() repeats edge values, so allow some
  }
}

TEST(GraphMaterialize, FillAndValues) {
  Input f = MakeInput(DType::kC64, {3}, Payload::Kind::kFill);
  f.payload.values = {2.5};
  EXPECT_EQ(MaterializePayload(f), (std::vector<double>{2.5, 0, 2.5, 0, 2.5, 0}));
  Input v = MakeInput(DType::kF32, {2}, Payload::Kind::kValues);
  v.payload.values = {0.1, -0.0};
  std::vector<double> got = MaterializePayload(v);
  EXPECT_EQ(got[0], static_cast<double>(0.1f));  // rounded to the dtype
  EXPECT_EQ(Bits(got[1]), Bits(-0.0));
  Input empty = MakeInput(DType::kF32, {0, 5}, Payload::Kind::kNormal);
  EXPECT_TRUE(MaterializePayload(empty).empty());
  Input scalar = MakeInput(DType::kF64, {}, Payload::Kind::kUniform, 1);
  EXPECT_EQ(MaterializePayload(scalar).size(), 1u);
}

TEST(GraphMaterialize, UniformRangeAndRounding) {
  Input in = MakeInput(DType::kBF16, {4096}, Payload::Kind::kUniform, 3, -0.35, 0.35);
  for (double v : MaterializePayload(in)) {
    EXPECT_GE(v, -0.35);
    EXPECT_LE(v, 0.35);
    EXPECT_EQ(v, RoundToDType(DType::kBF16, v));
  }
  Input ints = MakeInput(DType::kI8, {4096}, Payload::Kind::kUniform, 3, -1000, 1000);
  std::set<double> seen;
  for (double v : MaterializePayload(ints)) {
    EXPECT_TRUE(FitsIntegralDType(DType::kI8, v)) << v;
    seen.insert(v);
  }
  EXPECT_TRUE(seen.count(-128) && seen.count(127));  // clamped tails
  Input huge = MakeInput(DType::kF64, {1000}, Payload::Kind::kUniform, 3, -DBL_MAX, DBL_MAX);
  for (double v : MaterializePayload(huge)) EXPECT_TRUE(std::isfinite(v));
  Input bools = MakeInput(DType::kBool, {1000}, Payload::Kind::kUniform, 5);
  double ones = 0;
  for (double v : MaterializePayload(bools)) {
    EXPECT_TRUE(v == 0 || v == 1);
    ones += v;
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
}

TEST(GraphMaterialize, NormalMoments) {
  Input in = MakeInput(DType::kF64, {20000}, Payload::Kind::kNormal, 1, 3, 2);
  double sum = 0, sq = 0;
  std::vector<double> xs = MaterializePayload(in);
  for (double v : xs) sum += v;
  double mean = sum / xs.size();
  for (double v : xs) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 3, 0.05);
  EXPECT_NEAR(std::sqrt(sq / xs.size()), 2, 0.05);
  Input c = MakeInput(DType::kC128, {10}, Payload::Kind::kNormal, 1);
  EXPECT_EQ(MaterializePayload(c).size(), 20u);
}

TEST(GraphMaterialize, FloatEdgeValuesPerDType) {
  struct Want {
    DType dtype;
    double denorm, normal, max, below_one;
  };
  for (Want w : {Want{DType::kF16, 0x1p-24, 0x1p-14, 65504, 1 - 0x1p-11},
                 Want{DType::kBF16, 0x1p-133, 0x1p-126, 3.3895313892515355e38, 1 - 0x1p-8},
                 Want{DType::kF32, 0x1p-149, 0x1p-126, FLT_MAX, 1 - 0x1p-24},
                 Want{DType::kC64, 0x1p-149, 0x1p-126, FLT_MAX, 1 - 0x1p-24},
                 Want{DType::kF64, 0x1p-1074, 0x1p-1022, DBL_MAX, 1 - 0x1p-53}}) {
    std::vector<double> edges = EdgeValues(w.dtype);
    auto has = [&](double v) {
      for (double e : edges) {
        if (Bits(e) == Bits(v)) return true;
      }
      return false;
    };
    SCOPED_TRACE(std::string(DTypeName(w.dtype)));
    EXPECT_EQ(edges.size(), 16u);
    for (double v : {0.0, -0.0, w.denorm, -w.denorm, w.normal, w.max, -w.max, w.max / 2, HUGE_VAL,
                     -HUGE_VAL, 1.0, -1.0, 0.5, w.below_one}) {
      EXPECT_TRUE(has(v)) << v;
    }
    bool nan = false;
    for (double e : edges) {
      nan |= std::isnan(e);
      if (!std::isnan(e)) {
        EXPECT_EQ(Bits(e), Bits(RoundToDType(w.dtype, e))) << e;
      }
    }
    EXPECT_TRUE(nan);

    // special(): about half the elements are edges, and all of them show up.
    Input in = MakeInput(w.dtype, {4096}, Payload::Kind::kSpecial, 9);
    std::vector<double> xs = MaterializePayload(in);
    std::set<uint64_t> seen;
    size_t from_edges = 0;
    for (double v : xs) {
      if (has(v) || std::isnan(v)) ++from_edges;
      seen.insert(std::isnan(v) ? 0x7ff8000000000000ULL : Bits(v));
    }
    for (double e : edges) EXPECT_TRUE(seen.count(std::isnan(e) ? 0x7ff8000000000000ULL : Bits(e)));
    size_t parts = IsComplex(w.dtype) ? 8192 : 4096;
    EXPECT_GT(from_edges, parts * 4 / 10);
    EXPECT_LT(from_edges, parts * 6 / 10 + parts / 20);  // some normals round onto an edge
  }
}

TEST(GraphMaterialize, IntegerEdgeValues) {
  auto set_of = [](DType d) {
    std::vector<double> e = EdgeValues(d);
    return std::set<double>(e.begin(), e.end());
  };
  EXPECT_EQ(set_of(DType::kI8), (std::set<double>{0, 1, -1, -128, 127, -127, 126}));
  EXPECT_EQ(set_of(DType::kU8), (std::set<double>{0, 1, 255, 254}));
  EXPECT_EQ(set_of(DType::kI32),
            (std::set<double>{0, 1, -1, -2147483648.0, 2147483647, -2147483647, 2147483646}));
  EXPECT_EQ(set_of(DType::kBool), (std::set<double>{0, 1}));
  for (double v : EdgeValues(DType::kI64)) EXPECT_TRUE(FitsIntegralDType(DType::kI64, v)) << v;

  for (DType d : {DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    Input in = MakeInput(d, {2048}, Payload::Kind::kSpecial, 11);
    std::set<double> seen;
    for (double v : MaterializePayload(in)) {
      EXPECT_TRUE(FitsIntegralDType(d, v)) << DTypeName(d) << " " << v;
      seen.insert(v);
    }
    for (double e : EdgeValues(d)) EXPECT_TRUE(seen.count(e)) << DTypeName(d) << " " << e;
    Input n = MakeInput(d, {256}, Payload::Kind::kNormal, 2, 0, 100);
    for (double v : MaterializePayload(n)) EXPECT_TRUE(FitsIntegralDType(d, v));
  }
}

}  // namespace
}  // namespace divfuzz::graph
