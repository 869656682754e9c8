// Triage reruns kernels, witnesses and rules, and in a campaign most root
// divergences are ones it already judged: a mutation that changes nothing the
// diverging node depends on leaves the same node, on the same values, to be
// judged again (a 90-s CPU campaign with gradients spent 65% of its time in
// triage, on 2.5 roots an execution, nearly all in buckets already filed).
// The memo keys a root divergence by everything it is a function of: the
// node's slice of the program (the nodes and inputs it reads, transitively,
// each at its index: inputs are generated from their declarations, so equal
// text means equal values), the targets and the policy of the process, and
// the bytes each side's run gave the node (its inputs, its results and, at a
// gradient statement, every gradient on the path): a kernel that varies from
// run to run (CUDA's atomics) gives another key when its values differ. Such
// a root is judged once; its later copies take the judged divergence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "exec/run_result.h"
#include "graph/program.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

class TriageMemo {
 public:
  // At most `capacity` judged roots are kept; when full, the memo starts over.
  explicit TriageMemo(size_t capacity = 20000) : capacity_(capacity) {}

  // The key of the root at `node` of `program`, run as `verdict_targets`
  // ("cpu vs cuda+magma") with results `a` and `b`; nothing where the slice
  // is not all the root depends on: a node before it that writes in place
  // (aten::set_, an op ending in '_') can change a value no name in the
  // slice shows.
  static std::optional<std::string> KeyOf(const graph::Program& program, int node,
                                          const std::string& verdict_targets,
                                          const exec::RunResult& a, const exec::RunResult& b);

  const Divergence* Find(const std::string& key);
  void Put(const std::string& key, const Divergence& judged);

  int64_t reused() const { return reused_; }
  int64_t judged() const { return judged_; }

 private:
  struct Hash128 {
    uint64_t h1, h2;
    bool operator==(const Hash128& o) const { return h1 == o.h1 && h2 == o.h2; }
  };
  struct HashOfHash {
    size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.h1 ^ (h.h2 << 1)); }
  };
  static Hash128 HashOf(const std::string& key);
  size_t capacity_;
  std::unordered_map<Hash128, Divergence, HashOfHash> judged_roots_;
  int64_t reused_ = 0, judged_ = 0;
};

}  // namespace divfuzz::oracles
