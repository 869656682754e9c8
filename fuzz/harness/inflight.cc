#include "fuzz/harness/inflight.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace divfuzz::fuzz {
namespace {

constexpr uint64_t kMagic = 0x31746867696c6644ull;  // "Dflight1"

// The file: this header, then the input's bytes.
struct Header {
  uint64_t magic;
  std::atomic<uint64_t> size;      // 0: no input in flight
  std::atomic<uint64_t> sequence;  // inputs begun so far
};
constexpr size_t kSizeOffset = 8, kSequenceOffset = 16;
constexpr size_t kHeaderSize = 64;
static_assert(sizeof(Header) <= kHeaderSize);
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));

}  // namespace

absl::StatusOr<std::unique_ptr<InflightRecord>> InflightRecord::Open(const std::string& path,
                                                                     size_t capacity) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot create the in-flight input record ", path, ": ", strerror(errno)));
  }
  const size_t map_size = kHeaderSize + capacity;
  void* map = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(map_size)) == 0) {
    map = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int saved = errno;
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::UnavailableError(
        absl::StrCat("cannot map the in-flight input record ", path, ": ", strerror(saved)));
  }
  new (map) Header{kMagic, {0}, {0}};
  return std::unique_ptr<InflightRecord>(new InflightRecord(map, map_size));
}

InflightRecord::~InflightRecord() { ::munmap(map_, map_size_); }

void InflightRecord::Begin(const uint8_t* data, size_t size) {
  auto* header = static_cast<Header*>(map_);
  header->size.store(0, std::memory_order_relaxed);
  if (size == 0 || size > map_size_ - kHeaderSize) return;
  std::memcpy(static_cast<char*>(map_) + kHeaderSize, data, size);
  // The size last: a record with a size holds the whole input.
  header->sequence.fetch_add(1, std::memory_order_relaxed);
  header->size.store(size, std::memory_order_release);
}

void InflightRecord::End() { static_cast<Header*>(map_)->size.store(0, std::memory_order_release); }

namespace {

// The header's magic, size and sequence; nullopt when `fd` is no record.
std::optional<InflightState> ReadHeader(int fd) {
  uint64_t header[3] = {0, 0, 0};
  if (::pread(fd, header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header)) ||
      header[0] != kMagic) {
    return std::nullopt;
  }
  return InflightState{header[kSequenceOffset / 8], header[kSizeOffset / 8]};
}

}  // namespace

std::optional<std::string> ReadInflight(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> input;
  if (const std::optional<InflightState> state = ReadHeader(fd); state && state->size > 0) {
    std::string bytes(state->size, '\0');
    if (::pread(fd, bytes.data(), bytes.size(), kHeaderSize) ==
        static_cast<ssize_t>(bytes.size())) {
      input = std::move(bytes);
    }
  }
  ::close(fd);
  return input;
}

std::optional<InflightState> PeekInflight(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const std::optional<InflightState> state = ReadHeader(fd);
  ::close(fd);
  return state;
}

void ClearInflight(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  const uint64_t zero = 0;
  (void)::pwrite(fd, &zero, sizeof(zero), kSizeOffset);
  ::close(fd);
}

}  // namespace divfuzz::fuzz
