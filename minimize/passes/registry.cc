// The pass table, from passes.def.
#include "minimize/pass.h"

namespace divfuzz::minimize {

#define DIVFUZZ_PASS(fn, name, summary) void fn(ReductionContext& ctx);
#include "minimize/passes/passes.def"
#undef DIVFUZZ_PASS

const std::vector<PassInfo>& Passes() {
  static const std::vector<PassInfo> passes = {
#define DIVFUZZ_PASS(fn, name, summary) PassInfo{name, summary, &fn},
#include "minimize/passes/passes.def"
#undef DIVFUZZ_PASS
  };
  return passes;
}

std::string RootValue(const ReductionContext& ctx) {
  const oracles::Divergence& root = ctx.root();
  if (!root.value.empty()) return root.value;
  const graph::Program& p = ctx.program();
  if (root.node_index >= 0 && static_cast<size_t>(root.node_index) < p.nodes.size() &&
      !p.nodes[root.node_index].results.empty()) {
    return p.nodes[root.node_index].results[0];
  }
  return "";
}

}  // namespace divfuzz::minimize
