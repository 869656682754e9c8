// dtypes: the common dtype where the divergence survives: floating inputs to
// f32, complex ones to c64 (values rounded to it), and dtype arguments of
// nodes likewise. The diverging output's own dtype is part of the signature,
// so what changes is the rest of the program.
#include <functional>

#include "graph/dtype.h"
#include "minimize/pass.h"

namespace divfuzz::minimize {
namespace {

using graph::DType;

std::optional<DType> Simpler(DType d) {
  if (d == DType::kF64 || d == DType::kF16 || d == DType::kBF16) return DType::kF32;
  if (d == DType::kC128) return DType::kC64;
  return std::nullopt;
}

// Every dtype literal of a node, as pointers into it.
void DTypeLiterals(graph::Literal& l, std::vector<graph::Literal*>* out) {
  if (l.kind == graph::Literal::Kind::kDType) out->push_back(&l);
  for (graph::Literal& item : l.list) DTypeLiterals(item, out);
}

}  // namespace

void DTypesPass(ReductionContext& ctx) {
  for (size_t i = 0; i < ctx.program().inputs.size() && !ctx.OutOfTime(); ++i) {
    const std::optional<DType> to = Simpler(ctx.program().inputs[i].type.dtype);
    if (!to) continue;
    graph::Program p = ctx.program();
    graph::Input& in = p.inputs[i];
    in.type.dtype = *to;
    const DType part = *to == DType::kC64 ? DType::kF32 : *to;
    if (in.payload.kind == graph::Payload::Kind::kFill ||
        in.payload.kind == graph::Payload::Kind::kValues) {
      for (double& v : in.payload.values) v = graph::RoundToDType(part, v);
    }
    ctx.Try(p);
  }
  for (size_t n = 0; n < ctx.program().nodes.size() && !ctx.OutOfTime(); ++n) {
    graph::Program probe = ctx.program();
    std::vector<graph::Literal*> lits;
    for (graph::Argument& a : probe.nodes[n].args) DTypeLiterals(a.value, &lits);
    for (size_t k = 0; k < lits.size() && !ctx.OutOfTime(); ++k) {
      graph::Program p = ctx.program();
      std::vector<graph::Literal*> mine;
      for (graph::Argument& a : p.nodes[n].args) DTypeLiterals(a.value, &mine);
      if (k >= mine.size()) break;
      const std::optional<DType> to = Simpler(mine[k]->dtype);
      if (!to) continue;
      mine[k]->dtype = *to;
      ctx.Try(p);
    }
  }
}

}  // namespace divfuzz::minimize
