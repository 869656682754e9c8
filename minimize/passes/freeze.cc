// freeze: turns an intermediate value into an input holding exactly the value
// a target computed for it (values(...), hex-exact), so the prefix that
// produced it disappears. Nearest the diverging node first; target A's value,
// then target B's where it differs. Kept only when the divergence survives on
// both sides.
#include <vector>

#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {

void FreezePass(ReductionContext& ctx) {
  bool progress = true;
  while (progress && !ctx.OutOfTime()) {
    progress = false;
    const int root = ctx.root().node_index;
    if (root < 0) return;
    const std::set<int> anc = Ancestors(ctx.program(), root);
    for (auto it = anc.rbegin(); it != anc.rend() && !progress; ++it) {
      for (const exec::RunResult* run : {&ctx.run_a(), &ctx.run_b()}) {
        std::optional<graph::Program> p =
            CutNodes(ctx.program(), ctx.types(), *run, {*it}, /*bypass=*/false, {RootValue(ctx)});
        if (p && ctx.Try(*p)) {
          progress = true;
          break;
        }
        if (ctx.OutOfTime()) return;
      }
    }
  }
}

}  // namespace divfuzz::minimize
