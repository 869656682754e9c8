// delta: delta debugging (ddmin) over the nodes the diverging node depends on.
// First every one of them at once, then halves, quarters ... down to single
// nodes; runs of consecutive nodes are whole subgraphs of a chain. A removed
// node is bypassed (its result replaced by a same-typed operand) where it can
// be, else frozen into an input holding the value target A computed.
#include <algorithm>
#include <vector>

#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {

void DeltaPass(ReductionContext& ctx) {
  size_t parts = 1;
  while (!ctx.OutOfTime()) {
    const int root = ctx.root().node_index;
    if (root < 0) return;
    const std::set<int> anc = Ancestors(ctx.program(), root);
    const std::vector<int> nodes(anc.begin(), anc.end());
    if (nodes.empty()) return;
    parts = std::min(parts, nodes.size());
    const size_t chunk = (nodes.size() + parts - 1) / parts;
    bool progress = false;
    for (size_t start = 0; start < nodes.size() && !progress; start += chunk) {
      const std::set<int> cut(nodes.begin() + start,
                              nodes.begin() + std::min(nodes.size(), start + chunk));
      for (bool bypass : {true, false}) {
        std::optional<graph::Program> p =
            CutNodes(ctx.program(), ctx.types(), ctx.run_a(), cut, bypass, {RootValue(ctx)});
        if (p && ctx.Try(*p)) {
          progress = true;
          break;
        }
        if (ctx.OutOfTime()) return;
      }
    }
    if (progress) continue;  // same granularity over the smaller program
    if (chunk == 1) return;
    parts *= 2;
  }
}

}  // namespace divfuzz::minimize
