// SplitMix64: the payload generators' PRNG. Tiny and fully specified, so any
// target, a Python repro or a later version reproduces the same stream.
#pragma once

#include <cstdint>

namespace divfuzz::graph {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) from the top 53 bits.
  double Uniform01() { return static_cast<double>(Next() >> 11) * 0x1p-53; }

  // Uniform in [0, n), unbiased (rejection); 0 when n == 0.
  uint64_t NextBelow(uint64_t n) {
    if (n == 0) return 0;
    uint64_t threshold = (0 - n) % n;  // 2^64 mod n: draws below it are biased
    for (;;) {
      uint64_t r = Next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  uint64_t state_;
};

}  // namespace divfuzz::graph
