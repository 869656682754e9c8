// The mutators' randomness: one seeded stream, so a seed gives one program.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/rng.h"

namespace divfuzz::mutators {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  uint64_t Below(uint64_t n) { return rng_.NextBelow(n); }
  bool Chance(double p) { return rng_.Uniform01() < p; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * rng_.Uniform01(); }
  int64_t Range(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo + 1)));
  }
  uint64_t Seed() { return rng_.Next() >> 32; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  graph::SplitMix64 rng_;
};

}  // namespace divfuzz::mutators
