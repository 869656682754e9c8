// attributes: arguments back to their defaults. Drops each name=value
// argument and each trailing positional literal (the schema's default takes
// its place), and simplifies float literals (0, 1, fewer digits). A candidate
// the schema rejects raises on both sides and is not interesting.
#include <cmath>

#include "graph/dtype.h"
#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {
namespace {

bool IsTensorRef(const graph::Literal& l) {
  if (l.kind == graph::Literal::Kind::kValue) return true;
  for (const graph::Literal& item : l.list) {
    if (IsTensorRef(item)) return true;
  }
  return false;
}

void DropArguments(ReductionContext& ctx, size_t n) {
  // Named arguments, last first (their indices stay valid as we go).
  for (size_t k = ctx.program().nodes[n].args.size(); k-- > 0 && !ctx.OutOfTime();) {
    if (k >= ctx.program().nodes[n].args.size()) continue;
    const graph::Argument& a = ctx.program().nodes[n].args[k];
    if (a.name.empty() || IsTensorRef(a.value)) continue;
    graph::Program p = ctx.program();
    p.nodes[n].args.erase(p.nodes[n].args.begin() + static_cast<long>(k));
    ctx.Try(p);
  }
  // Trailing positional literals, one at a time from the end.
  while (!ctx.OutOfTime()) {
    const std::vector<graph::Argument>& args = ctx.program().nodes[n].args;
    int last = -1;
    for (size_t k = 0; k < args.size(); ++k) {
      if (args[k].name.empty()) last = static_cast<int>(k);
    }
    if (last < 0 || IsTensorRef(args[last].value)) return;
    graph::Program p = ctx.program();
    p.nodes[n].args.erase(p.nodes[n].args.begin() + last);
    if (!ctx.Try(p)) return;
  }
}

void SimplifyFloats(ReductionContext& ctx, size_t n) {
  for (size_t k = 0; k < ctx.program().nodes[n].args.size() && !ctx.OutOfTime(); ++k) {
    const graph::Literal& l = ctx.program().nodes[n].args[k].value;
    if (l.kind != graph::Literal::Kind::kFloat || !std::isfinite(l.f)) continue;
    const double v = l.f;
    for (double to :
         {0.0, 1.0, RoundDigits(v, 1, graph::DType::kF64), RoundDigits(v, 2, graph::DType::kF64),
          RoundDigits(v, 4, graph::DType::kF64)}) {
      if (to == v || std::fabs(to) > std::fabs(v) * 2 + 1) continue;
      graph::Program p = ctx.program();
      p.nodes[n].args[k].value.f = to;
      if (ctx.Try(p)) break;
    }
  }
}

}  // namespace

void AttributesPass(ReductionContext& ctx) {
  for (size_t n = 0; n < ctx.program().nodes.size() && !ctx.OutOfTime(); ++n) {
    DropArguments(ctx, n);
    if (n < ctx.program().nodes.size()) SimplifyFloats(ctx, n);
  }
}

}  // namespace divfuzz::minimize
