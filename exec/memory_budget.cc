#include "exec/memory_budget.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace divfuzz::exec {
namespace {

int64_t ElementBytes(graph::DType d) { return graph::IsComplex(d) ? 16 : 8; }

// Saturates instead of overflowing: shapes here may be absurd on purpose.
int64_t Bytes(const graph::TensorType& t) {
  const int64_t n = t.Numel();
  if (n < 0) return 0;
  const int64_t per = ElementBytes(t.dtype);
  if (n > std::numeric_limits<int64_t>::max() / per) return std::numeric_limits<int64_t>::max();
  return n * per;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace

int64_t FootprintBytes(const ops::TypeEnv& types) {
  int64_t total = 0;
  for (const auto& [name, type] : types) total = SaturatingAdd(total, Bytes(type));
  return total;
}

absl::Status CheckMemoryBudget(const graph::Program& program, const ops::TypeEnv& types,
                               int64_t budget_mb, absl::string_view filename) {
  const int64_t total = FootprintBytes(types);
  if (budget_mb <= 0 || total <= budget_mb * (int64_t{1} << 20)) return absl::OkStatus();
  // Name the largest value and where it is defined, so the user sees which
  // shape is absurd.
  std::string largest;
  int64_t largest_bytes = -1;
  graph::SourceLoc loc;
  for (const graph::Input& in : program.inputs) {
    if (auto it = types.find(in.name); it != types.end() && Bytes(it->second) > largest_bytes) {
      largest_bytes = Bytes(it->second), largest = in.name, loc = in.loc;
    }
  }
  for (const graph::Node& n : program.nodes) {
    for (const std::string& r : n.results) {
      if (auto it = types.find(r); it != types.end() && Bytes(it->second) > largest_bytes) {
        largest_bytes = Bytes(it->second), largest = r, loc = n.loc;
      }
    }
  }
  auto mib = [](int64_t b) { return absl::StrFormat("%.0f MiB", b / 1048576.0); };
  return absl::ResourceExhaustedError(
      absl::StrCat(filename, ":", loc.line, ":", loc.col, ": the program's tensors need about ",
                   mib(total), " (largest: %", largest, ", ", mib(largest_bytes),
                   "), over the memory budget of ", budget_mb, " MiB (--memory_budget_mb)"));
}

}  // namespace divfuzz::exec
