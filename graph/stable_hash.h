// FNV-1a, 64 bits: a hash fixed by definition (unlike std::hash and
// absl::Hash, which may differ between processes), for values that every
// process and run must compute alike: bucket ids, feedback counters, the
// program generated from unparsable bytes, skip lists.
#pragma once

#include <cstddef>
#include <cstdint>

namespace divfuzz::graph {

inline constexpr uint64_t kFnv1aBasis = 0xcbf29ce484222325ULL;
// The basis the fuzz layer has always used (FNV's, a digit short). Kept so
// that programs generated from bytes and learned probe seeds stay the same.
inline constexpr uint64_t kFuzzHashBasis = 1469598103934665603ULL;

// Continues hash `h` over the bytes: Fnv1a64(b, n, Fnv1a64(a, m)) hashes a then b.
inline uint64_t Fnv1a64(const void* data, size_t size, uint64_t h = kFnv1aBasis) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace divfuzz::graph
