// The input a libFuzzer worker is running, kept where it outlives the worker.
//
// libFuzzer writes a crash artifact from its signal handler. A worker that
// dies before that handler can write (SIGKILL from the kernel's OOM killer,
// or a heap corrupted by the kernel under test: MKL's sgebal on non-finite
// float32 input makes glibc abort inside the handler's own allocations, over
// and over) leaves no artifact, and its input was lost. The worker copies
// each input into a file-backed shared mapping before running it; the
// campaign supervisor reads it back when a worker dies without an artifact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace divfuzz::fuzz {

class InflightRecord {
 public:
  // Creates (or empties) `path`, room for inputs of up to `capacity` bytes.
  static absl::StatusOr<std::unique_ptr<InflightRecord>> Open(const std::string& path,
                                                              size_t capacity);
  ~InflightRecord();
  InflightRecord(const InflightRecord&) = delete;
  InflightRecord& operator=(const InflightRecord&) = delete;

  // No allocation and no system call: only memory stores, which the kernel
  // keeps in the file whatever way the process dies. An input over the
  // capacity is not recorded.
  void Begin(const uint8_t* data, size_t size);
  void End();

 private:
  InflightRecord(void* map, size_t map_size) : map_(map), map_size_(map_size) {}
  void* map_;
  size_t map_size_;
};

// The input a dead worker was running, from its record; nullopt when it was
// between inputs (or the file is missing or not a record).
std::optional<std::string> ReadInflight(const std::string& path);

// Where a worker is, read without copying its input: the supervisor polls
// it to find a worker whose input runs far past libFuzzer's -timeout (whose
// alarm handler is then as wedged as its crash handler).
struct InflightState {
  uint64_t sequence = 0;  // inputs begun so far
  uint64_t size = 0;      // the running input's size; 0 between inputs
};
std::optional<InflightState> PeekInflight(const std::string& path);

// Clears a record so a later read finds no input in it.
void ClearInflight(const std::string& path);

}  // namespace divfuzz::fuzz
