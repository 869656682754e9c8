// layouts: inputs back to contiguous where the divergence survives, so a
// finding names a layout only when the layout is part of the bug.
#include "minimize/pass.h"

namespace divfuzz::minimize {

void LayoutsPass(ReductionContext& ctx) {
  for (size_t i = 0; i < ctx.program().inputs.size() && !ctx.OutOfTime(); ++i) {
    if (ctx.program().inputs[i].layout == graph::Layout::kContiguous) continue;
    graph::Program p = ctx.program();
    p.inputs[i].layout = graph::Layout::kContiguous;
    ctx.Try(p);
  }
}

}  // namespace divfuzz::minimize
