#include "graph/gradient.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace divfuzz::graph {

bool IsGradNode(const Node& node) { return node.op == kGradOp && node.overload.empty(); }

std::string FirstOrderName(const std::string& value, const std::string& statement) {
  return value + "@" + statement;
}

GradPath PathOfGradient(const Program& program, int g, int out) {
  GradPath path;
  if (g < 0 || static_cast<size_t>(g) >= program.nodes.size() || out < 0) return path;
  const GradCallOrError call = ParseGradCall(program.nodes[g]);
  if (!call.call || static_cast<size_t>(out) >= call.call->wrt.size()) return path;
  path.values.insert(call.call->wrt[out]);
  for (int k = 0; k < g; ++k) {
    const Node& n = program.nodes[k];
    bool reads = false;
    for (const std::string& u : n.Uses()) reads = reads || path.values.count(u) > 0;
    if (!reads) continue;
    path.values.insert(n.results.begin(), n.results.end());
    path.nodes.insert(k);
  }
  return path;
}

std::string FirstOrderBase(const std::string& name) {
  const size_t at = name.find('@');
  return at == std::string::npos ? "" : name.substr(0, at);
}

namespace {

// A value or a list of values; false when anything else is there.
bool Names(const Literal& l, std::vector<std::string>* out, bool* listed) {
  if (l.kind == Literal::Kind::kValue) {
    out->push_back(l.s);
    if (listed != nullptr) *listed = false;
    return true;
  }
  if (l.kind != Literal::Kind::kList) return false;
  if (listed != nullptr) *listed = true;
  for (const Literal& item : l.list) {
    if (item.kind != Literal::Kind::kValue) return false;
    out->push_back(item.s);
  }
  return true;
}

}  // namespace

GradCallOrError ParseGradCall(const Node& node) {
  GradCallOrError r;
  const Literal* outputs = nullptr;
  const Literal* inputs = nullptr;
  const Literal* cotangents = nullptr;
  size_t positional = 0;
  for (const Argument& a : node.args) {
    if (a.name.empty()) {
      (positional == 0 ? outputs : positional == 1 ? inputs : cotangents) = &a.value;
      ++positional;
    } else if (a.name == "outputs") {
      outputs = &a.value;
    } else if (a.name == "inputs") {
      inputs = &a.value;
    } else if (a.name == kGradOutputsArg) {
      cotangents = &a.value;
    } else {
      r.error = absl::StrCat("expected arguments outputs, inputs, grad_outputs of ", kGradOp,
                             ", got '", a.name, "'");
      return r;
    }
  }
  if (positional > 3 || outputs == nullptr || inputs == nullptr || cotangents == nullptr) {
    r.error = absl::StrCat("expected ", kGradOp, "(%y, [%x, ...], grad_outputs=%v)");
    return r;
  }
  GradCall call;
  if (!Names(*outputs, &call.outputs, &call.listed_outputs) || call.outputs.empty()) {
    r.error = "expected the outputs as %y or [%y1, %y2, ...]";
    return r;
  }
  if (inputs->kind != Literal::Kind::kList || !Names(*inputs, &call.wrt, nullptr) ||
      call.wrt.empty()) {
    r.error = "expected the inputs as a non-empty list [%x, ...]";
    return r;
  }
  if (!Names(*cotangents, &call.cotangents, nullptr) ||
      call.cotangents.size() != call.outputs.size()) {
    r.error = absl::StrCat("expected one cotangent in grad_outputs per output (",
                           call.outputs.size(), "), got ",
                           cotangents->kind == Literal::Kind::kList ? cotangents->list.size() : 1);
    return r;
  }
  if (std::set<std::string>(call.wrt.begin(), call.wrt.end()).size() != call.wrt.size()) {
    r.error = "expected distinct inputs to differentiate against";
    return r;
  }
  if (node.results.size() != call.wrt.size()) {
    r.error = absl::StrCat("expected one result per input (", call.wrt.size(), "), got ",
                           node.results.size());
    return r;
  }
  r.call = std::move(call);
  return r;
}

Node MakeGradNode(const GradCall& call, std::vector<std::string> results) {
  Node node;
  node.op = kGradOp;
  node.results = std::move(results);
  auto list = [](const std::vector<std::string>& names) {
    std::vector<Literal> items;
    for (const std::string& n : names) items.push_back(Literal::Value(n));
    return Literal::List(std::move(items));
  };
  const bool listed = call.listed_outputs || call.outputs.size() != 1;
  node.args.push_back({"", listed ? list(call.outputs) : Literal::Value(call.outputs[0])});
  node.args.push_back({"", list(call.wrt)});
  node.args.push_back({kGradOutputsArg, listed ? list(call.cotangents)
                                               : Literal::Value(call.cotangents[0])});
  return node;
}

bool HasGradients(const Program& program) {
  for (const Node& n : program.nodes) {
    if (IsGradNode(n)) return true;
  }
  return false;
}

std::vector<std::string> DifferentiatedInputs(const Program& program) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Node& n : program.nodes) {
    if (!IsGradNode(n)) continue;
    GradCallOrError g = ParseGradCall(n);
    if (!g.call) continue;
    for (const std::string& x : g.call->wrt) {
      if (seen.insert(x).second) out.push_back(x);
    }
  }
  return out;
}

}  // namespace divfuzz::graph
