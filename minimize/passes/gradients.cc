// gradients: smaller gradient statements (graph/gradient.h). Per statement:
// fewer differentiated outputs (a list `[%y1, %y2]` keeps at least one, with
// its cotangent), fewer inputs in the wrt list (at least one; the dropped
// gradient's uses read an input holding the value target A computed for it,
// or it goes), then each cotangent as ones (an input's payload to fill(1.0),
// a computed cotangent replaced by a new fill(1.0) input). Forward nodes are
// cut by slice, delta and freeze; every candidate is sliced to the diverging
// value and type-checked by the interestingness test, so a statement whose
// outputs no longer depend on its inputs stays valid (its gradients are zeros).
#include <set>
#include <string>
#include <vector>

#include "graph/gradient.h"
#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {
namespace {

using graph::GradCall;

std::optional<GradCall> CallAt(const graph::Program& p, size_t n) {
  if (n >= p.nodes.size() || !graph::IsGradNode(p.nodes[n])) return std::nullopt;
  graph::GradCallOrError g = graph::ParseGradCall(p.nodes[n]);
  return g.call;
}

// Whether any node or output reads `value`.
bool Used(const graph::Program& p, const std::string& value) {
  for (const graph::Node& node : p.nodes) {
    for (const std::string& u : node.Uses()) {
      if (u == value) return true;
    }
  }
  for (const std::string& o : p.outputs) {
    if (o == value) return true;
  }
  return false;
}

// A name no input or node result of `p` has, from `base`.
std::string FreshName(const graph::Program& p, const std::string& base) {
  std::set<std::string> taken;
  for (const graph::Input& in : p.inputs) taken.insert(in.name);
  for (const graph::Node& node : p.nodes) taken.insert(node.results.begin(), node.results.end());
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

// Statement n without the wrt input k and its result; the result's uses read
// target A's value of it (an input of that name). nullopt when that value
// cannot be frozen or the result is the diverging value.
std::optional<graph::Program> DropInput(ReductionContext& ctx, size_t n, size_t k) {
  const graph::Program& cur = ctx.program();
  std::optional<GradCall> call = CallAt(cur, n);
  if (!call || call->wrt.size() < 2 || k >= call->wrt.size()) return std::nullopt;
  const std::string result = cur.nodes[n].results[k];
  if (result == RootValue(ctx)) return std::nullopt;
  graph::Program p = cur;
  call->wrt.erase(call->wrt.begin() + k);
  std::vector<std::string> results = cur.nodes[n].results;
  results.erase(results.begin() + k);
  graph::Node node = graph::MakeGradNode(*call, std::move(results));
  node.loc = cur.nodes[n].loc;
  p.nodes[n] = std::move(node);
  if (Used(p, result)) {
    auto type = ctx.types().find(result);
    const exec::RunResult& run = ctx.run_a();
    if (type == ctx.types().end() || n >= run.nodes.size() || run.nodes[n].error ||
        k >= run.nodes[n].outputs.size()) {
      return std::nullopt;
    }
    std::optional<graph::Input> frozen = FrozenInput(result, type->second, run.nodes[n].outputs[k]);
    if (!frozen) return std::nullopt;
    p.inputs.push_back(std::move(*frozen));
  }
  return Slice(p, {RootValue(ctx)});
}

// Statement n differentiating all its outputs but output k (and its cotangent).
std::optional<graph::Program> DropOutput(ReductionContext& ctx, size_t n, size_t k) {
  const graph::Program& cur = ctx.program();
  std::optional<GradCall> call = CallAt(cur, n);
  if (!call || call->outputs.size() < 2 || k >= call->outputs.size()) return std::nullopt;
  graph::Program p = cur;
  call->outputs.erase(call->outputs.begin() + k);
  call->cotangents.erase(call->cotangents.begin() + k);
  graph::Node node = graph::MakeGradNode(*call, cur.nodes[n].results);
  node.loc = cur.nodes[n].loc;
  p.nodes[n] = std::move(node);
  return Slice(p, {RootValue(ctx)});
}

bool IsOnes(const graph::Input& in) {
  return in.payload.kind == graph::Payload::Kind::kFill && in.payload.values.size() == 1 &&
         in.payload.values[0] == 1.0 && !std::signbit(in.payload.values[0]);
}

// Statement n's cotangent k as ones: an input's payload becomes fill(1.0); a
// computed one is replaced, in this statement only, by a new fill(1.0) input.
std::optional<graph::Program> OnesCotangent(ReductionContext& ctx, size_t n, size_t k) {
  const graph::Program& cur = ctx.program();
  std::optional<GradCall> call = CallAt(cur, n);
  if (!call || k >= call->cotangents.size()) return std::nullopt;
  const std::string& v = call->cotangents[k];
  graph::Payload ones;
  ones.kind = graph::Payload::Kind::kFill;
  ones.values = {1.0};
  graph::Program p = cur;
  for (graph::Input& in : p.inputs) {
    if (in.name != v) continue;
    if (IsOnes(in)) return std::nullopt;
    in.payload = ones;
    return p;
  }
  auto type = ctx.types().find(v);
  if (type == ctx.types().end()) return std::nullopt;
  graph::Input in;
  in.name = FreshName(cur, v + "_ones");
  in.type = type->second;
  in.payload = ones;
  call->cotangents[k] = in.name;
  graph::Node node = graph::MakeGradNode(*call, cur.nodes[n].results);
  node.loc = cur.nodes[n].loc;
  p.nodes[n] = std::move(node);
  p.inputs.push_back(std::move(in));
  return Slice(p, {RootValue(ctx)});
}

}  // namespace

void GradientsPass(ReductionContext& ctx) {
  for (size_t n = 0; n < ctx.program().nodes.size() && !ctx.OutOfTime(); ++n) {
    if (!CallAt(ctx.program(), n)) continue;
    // A kept candidate may slice nodes away: the statement is then found
    // again by its results (the first one that survives names it).
    const std::vector<std::string> results = ctx.program().nodes[n].results;
    auto locate = [&]() -> std::optional<size_t> {
      const graph::Program& p = ctx.program();
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        if (!graph::IsGradNode(p.nodes[i])) continue;
        for (const std::string& r : p.nodes[i].results) {
          for (const std::string& want : results) {
            if (r == want) return i;
          }
        }
      }
      return std::nullopt;
    };
    for (auto edit : {&DropOutput, &DropInput}) {
      for (size_t k = 0; !ctx.OutOfTime();) {
        std::optional<size_t> at = locate();
        if (!at) return;
        std::optional<GradCall> call = CallAt(ctx.program(), *at);
        const size_t count = edit == &DropOutput ? call->outputs.size() : call->wrt.size();
        if (count < 2 || k >= count) break;
        std::optional<graph::Program> p = edit(ctx, *at, k);
        if (!(p && ctx.Try(*p))) ++k;  // kept: the next one moved to k
      }
    }
    for (size_t k = 0; !ctx.OutOfTime(); ++k) {
      std::optional<size_t> at = locate();
      if (!at) return;
      if (k >= CallAt(ctx.program(), *at)->cotangents.size()) break;
      std::optional<graph::Program> p = OnesCotangent(ctx, *at, k);
      if (p) ctx.Try(*p);
    }
    if (std::optional<size_t> at = locate()) n = *at;
  }
}

}  // namespace divfuzz::minimize
