// slice: the backward slice from the diverging output. Nodes it does not
// depend on (later nodes, unrelated branches) and unread inputs go.
#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {

void SlicePass(ReductionContext& ctx) {
  const std::string value = RootValue(ctx);
  if (value.empty()) return;
  graph::Program p = Slice(ctx.program(), {value});
  if (p != ctx.program()) ctx.Try(p);
}

}  // namespace divfuzz::minimize
