#include "mutators/gradient_mutations.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "graph/validate.h"
#include "mutators/mutator.h"

namespace divfuzz::mutators {
namespace {

using graph::DType;
using graph::GradCall;
using graph::Input;
using graph::Layout;
using graph::Node;
using graph::Payload;
using graph::Program;

// At most this many gradient statements in a program (a second one may
// differentiate the first's gradients: second order).
constexpr int kMaxGradients = 2;

bool Differentiable(DType d) { return graph::IsFloating(d) || graph::IsComplex(d); }

Input* FindInput(Program& p, const std::string& name) {
  for (Input& in : p.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

// The input checked on its own, as ValidateProgram checks it in a program.
bool InputValid(const Input& in) {
  Program q;
  q.inputs = {in};
  q.inputs[0].loc = {};
  q.outputs = {in.name};
  return graph::ValidateProgram(q).ok();
}

// Fresh names beside every name of the program (inputs and results).
class FreshNames {
 public:
  explicit FreshNames(const Program& p) {
    for (const Input& in : p.inputs) taken_.insert(in.name);
    for (const Node& n : p.nodes) taken_.insert(n.results.begin(), n.results.end());
  }
  std::string Next(const char* prefix) {
    for (size_t i = 0;; ++i) {
      std::string name = absl::StrCat(prefix, i);
      if (taken_.insert(name).second) return name;
    }
  }

 private:
  std::set<std::string> taken_;
};

// `values` and every name they are computed from through `nodes`.
std::set<std::string> Reaching(const std::vector<Node>& nodes,
                               const std::vector<std::string>& values) {
  std::map<std::string, const Node*> producer;
  for (const Node& n : nodes) {
    for (const std::string& r : n.results) producer[r] = &n;
  }
  std::set<std::string> seen;
  std::vector<std::string> stack = values;
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    auto it = producer.find(v);
    if (it == producer.end()) continue;
    for (const std::string& u : it->second->Uses()) stack.push_back(u);
  }
  return seen;
}

// A non-empty random subset, in order.
std::vector<std::string> Subset(const std::vector<std::string>& v, Random& random, double p) {
  std::vector<std::string> out;
  for (const std::string& s : v) {
    if (random.Chance(p)) out.push_back(s);
  }
  if (out.empty() && !v.empty()) out.push_back(random.Pick(v));
  return out;
}

std::vector<size_t> GradNodes(const Program& p) {
  std::vector<size_t> out;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (graph::IsGradNode(p.nodes[i])) out.push_back(i);
  }
  return out;
}

// How many nodes read the value (an input used nowhere else may be retyped).
int UseCount(const Program& p, const std::string& name) {
  int n = 0;
  for (const Node& node : p.nodes) {
    for (const std::string& u : node.Uses()) n += u == name;
  }
  return n;
}

// Later nodes reading `from` read `to` instead; outputs naming it drop it.
void Substitute(Program& p, size_t after, const std::string& from, const std::string& to) {
  std::function<void(graph::Literal&)> visit = [&](graph::Literal& l) {
    if (l.kind == graph::Literal::Kind::kValue && l.s == from) l.s = to;
    for (graph::Literal& item : l.list) visit(item);
  };
  for (size_t k = after; k < p.nodes.size(); ++k) {
    for (graph::Argument& a : p.nodes[k].args) visit(a.value);
  }
  p.outputs.erase(std::remove(p.outputs.begin(), p.outputs.end(), from), p.outputs.end());
}

void EnsureOutputs(Program& p) {
  if (p.outputs.empty()) p.outputs = Leaves(p);
  if (p.outputs.empty() && !p.inputs.empty()) p.outputs = {p.inputs[0].name};
}

void AddOutput(Program& p, const std::string& name) {
  if (std::find(p.outputs.begin(), p.outputs.end(), name) == p.outputs.end()) {
    p.outputs.push_back(name);
  }
}

// A cotangent's payload, drawn as other inputs' are: ones (the plain
// gradient) sometimes, mostly normal, and the values that break numerics
// (special, limits, domain edges, ties, wide dynamic range) the rest.
Payload CotangentPayload(Random& random) {
  Payload p;
  p.seed = random.Seed();
  const uint64_t r = random.Below(20);
  if (r < 4) {
    p.kind = Payload::Kind::kFill;
    p.values = {1.0};
  } else if (r < 11) {
    p.kind = Payload::Kind::kNormal;
    p.a = 0, p.b = 1;
  } else if (r < 13) {
    p.kind = Payload::Kind::kUniform;
    p.a = -3, p.b = 3;
  } else {
    const std::vector<Payload::Kind> kinds = {
        Payload::Kind::kSpecial, Payload::Kind::kLimits, Payload::Kind::kEdges,
        Payload::Kind::kTies,    Payload::Kind::kDynamic, Payload::Kind::kPlanted};
    p.kind = random.Pick(kinds);
    p.a = p.kind == Payload::Kind::kTies      ? random.Pick(std::vector<double>{1, 2, 3})
          : p.kind == Payload::Kind::kDynamic ? random.Pick(std::vector<double>{8, 16, 30})
                                              : 0;
  }
  return p;
}

// A cotangent input of the type: a drawn payload, now and then a layout that
// hands the backward kernels a non-contiguous incoming gradient.
Input MakeCotangent(const std::string& name, const graph::TensorType& type, Random& random) {
  Input in;
  in.name = name;
  in.type = type;
  in.payload = CotangentPayload(random);
  if (!InputValid(in)) in.payload = Payload{Payload::Kind::kNormal, {}, random.Seed(), 0, 1};
  if (random.Chance(0.15) && !type.shape.empty()) {
    std::vector<Layout> layouts = {Layout::kStrided};
    if (type.shape.size() >= 2) layouts.push_back(Layout::kTransposed);
    if (type.shape.size() == 4) layouts.push_back(Layout::kChannelsLast);
    Input laid = in;
    laid.layout = random.Pick(layouts);
    if (InputValid(laid)) in = laid;
  }
  return in;
}

// A retyped input's payload and layout made to fit its new type.
void FitInput(Input& in) {
  if (InputValid(in)) return;
  in.layout = Layout::kContiguous;
  if (InputValid(in)) return;
  in.payload = Payload{Payload::Kind::kNormal, {}, in.payload.seed, 0, 1};
}

}  // namespace

bool IsRandomOp(const Node& node) {
  static const char* const kParts[] = {"rand", "dropout", "bernoulli", "multinomial", "rrelu"};
  static const char* const kNames[] = {
      "aten::normal",   "aten::poisson",    "aten::uniform",         "aten::exponential",
      "aten::geometric", "aten::cauchy",    "aten::log_normal",      "aten::binomial",
      "aten::_standard_gamma", "aten::_sample_dirichlet"};
  const absl::string_view base =
      absl::StartsWith(node.op, "aten::") ? absl::string_view(node.op).substr(6) : node.op;
  for (const char* part : kParts) {
    if (absl::StrContains(base, part)) return true;
  }
  for (const char* name : kNames) {
    if (node.op == name) return true;
  }
  return false;
}

bool HasRandomOp(const Program& program) {
  return std::any_of(program.nodes.begin(), program.nodes.end(), IsRandomOp);
}

std::set<std::string> InputsReaching(const Program& program,
                                     const std::vector<std::string>& values) {
  std::set<std::string> inputs;
  const std::set<std::string> reached = Reaching(program.nodes, values);
  for (const Input& in : program.inputs) {
    if (reached.count(in.name)) inputs.insert(in.name);
  }
  return inputs;
}

bool ProgramValid(const Program& p) {
  return graph::ValidateProgram(p).ok() && ops::InferProgram(p).ok();
}

bool AddGradient(Program& p, Random& random) {
  if (p.nodes.empty() || HasRandomOp(p) ||
      static_cast<int>(GradNodes(p).size()) >= kMaxGradients) {
    return false;
  }
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return false;
  std::set<std::string> results;
  for (const Node& n : p.nodes) results.insert(n.results.begin(), n.results.end());
  auto candidate = [&](const std::string& v) {
    auto it = types->find(v);
    return results.count(v) && it != types->end() && Differentiable(it->second.dtype);
  };
  std::vector<std::string> outputs, last;
  for (const std::string& o : p.outputs) {
    if (candidate(o) && std::find(outputs.begin(), outputs.end(), o) == outputs.end()) {
      outputs.push_back(o);
    }
  }
  for (const std::string& r : p.nodes.back().results) {
    if (candidate(r)) last.push_back(r);
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    const bool use_last = !last.empty() && (outputs.empty() || random.Chance(0.3));
    const std::vector<std::string>& pool = use_last ? last : outputs;
    if (pool.empty()) return false;
    const std::vector<std::string> ys = Subset(pool, random, 0.5);
    std::vector<std::string> reaching;
    for (const std::string& x : InputsReaching(p, ys)) {
      if (Differentiable(types->at(x).dtype)) reaching.push_back(x);
    }
    if (reaching.empty()) continue;
    // In the program's input order, so the list reads as the signature does.
    std::vector<std::string> ordered;
    for (const Input& in : p.inputs) {
      if (std::find(reaching.begin(), reaching.end(), in.name) != reaching.end()) {
        ordered.push_back(in.name);
      }
    }
    Program q = p;
    GradCall call;
    call.outputs = ys;
    call.wrt = Subset(ordered, random, 0.6);
    call.listed_outputs = ys.size() > 1;
    FreshNames names(q);
    for (const std::string& y : ys) {
      Input v = MakeCotangent(names.Next("ct"), types->at(y), random);
      call.cotangents.push_back(v.name);
      q.inputs.push_back(std::move(v));
    }
    std::vector<std::string> grads;
    for (size_t i = 0; i < call.wrt.size(); ++i) grads.push_back(names.Next("g"));
    q.nodes.push_back(graph::MakeGradNode(call, grads));
    for (const std::string& y : ys) AddOutput(q, y);
    for (const std::string& g : grads) AddOutput(q, g);
    if (!ProgramValid(q)) continue;
    p = std::move(q);
    return true;
  }
  return false;
}

bool DropGradientInput(Program& p, Random& random) {
  std::vector<size_t> nodes;
  for (size_t i : GradNodes(p)) {
    graph::GradCallOrError g = graph::ParseGradCall(p.nodes[i]);
    if (g.call && g.call->wrt.size() >= 2) nodes.push_back(i);
  }
  if (nodes.empty()) return false;
  const size_t i = random.Pick(nodes);
  Program q = p;
  GradCall call = *graph::ParseGradCall(q.nodes[i]).call;
  std::vector<std::string> results = q.nodes[i].results;
  const size_t k = random.Below(call.wrt.size());
  const std::string x = call.wrt[k], g = results[k];
  call.wrt.erase(call.wrt.begin() + static_cast<long>(k));
  results.erase(results.begin() + static_cast<long>(k));
  const graph::SourceLoc loc = q.nodes[i].loc;
  q.nodes[i] = graph::MakeGradNode(call, results);
  q.nodes[i].loc = loc;
  // The gradient has its input's type: later uses read the input.
  Substitute(q, i + 1, g, x);
  EnsureOutputs(q);
  if (!ProgramValid(q)) return false;
  p = std::move(q);
  return true;
}

bool AddGradientInput(Program& p, Random& random) {
  std::vector<size_t> nodes = GradNodes(p);
  if (nodes.empty()) return false;
  const size_t i = random.Pick(nodes);
  graph::GradCallOrError g = graph::ParseGradCall(p.nodes[i]);
  if (!g.call) return false;
  GradCall call = *g.call;
  std::vector<std::string> more;
  for (const std::string& x : InputsReaching(p, call.outputs)) {
    const Input* in = FindInput(p, x);
    if (in != nullptr && Differentiable(in->type.dtype) &&
        std::find(call.wrt.begin(), call.wrt.end(), x) == call.wrt.end()) {
      more.push_back(x);
    }
  }
  if (more.empty()) return false;
  Program q = p;
  std::vector<std::string> results = q.nodes[i].results;
  const size_t at = random.Below(call.wrt.size() + 1);
  const std::string name = FreshNames(q).Next("g");
  call.wrt.insert(call.wrt.begin() + static_cast<long>(at), random.Pick(more));
  results.insert(results.begin() + static_cast<long>(at), name);
  const graph::SourceLoc loc = q.nodes[i].loc;
  q.nodes[i] = graph::MakeGradNode(call, results);
  q.nodes[i].loc = loc;
  AddOutput(q, name);
  if (!ProgramValid(q)) return false;
  p = std::move(q);
  return true;
}

bool ChangeCotangent(Program& p, Random& random) {
  std::vector<size_t> nodes = GradNodes(p);
  if (nodes.empty()) return false;
  const size_t i = random.Pick(nodes);
  graph::GradCallOrError g = graph::ParseGradCall(p.nodes[i]);
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!g.call || !types.ok()) return false;
  GradCall call = *g.call;
  const size_t k = random.Below(call.cotangents.size());
  Program q = p;
  Input* own = FindInput(q, call.cotangents[k]);
  if (own != nullptr && UseCount(q, own->name) == 1) {
    // Its own input: a new payload (and now and then a layout).
    const Input before = *own;
    for (int attempt = 0; attempt < 4 && *own == before; ++attempt) {
      Input fresh = MakeCotangent(own->name, own->type, random);
      *own = fresh;
    }
    if (*own == before) return false;
  } else {
    // Shared, or a computed value: a new input of the output's type.
    auto y = types->find(call.outputs[k]);
    if (y == types->end()) return false;
    Input v = MakeCotangent(FreshNames(q).Next("ct"), y->second, random);
    call.cotangents[k] = v.name;
    q.inputs.push_back(std::move(v));
    const graph::SourceLoc loc = q.nodes[i].loc;
    q.nodes[i] = graph::MakeGradNode(call, q.nodes[i].results);
    q.nodes[i].loc = loc;
  }
  if (!ProgramValid(q)) return false;
  p = std::move(q);
  return true;
}

bool RemoveGradient(Program& p, Random& random) {
  std::vector<size_t> nodes = GradNodes(p);
  if (nodes.empty()) return false;
  const size_t i = random.Pick(nodes);
  graph::GradCallOrError g = graph::ParseGradCall(p.nodes[i]);
  if (!g.call) return false;
  Program q = p;
  const std::vector<std::string> results = q.nodes[i].results;
  q.nodes.erase(q.nodes.begin() + static_cast<long>(i));
  for (size_t k = 0; k < results.size(); ++k) Substitute(q, i, results[k], g.call->wrt[k]);
  // Its cotangents go with it where nothing else reads them.
  for (const std::string& v : g.call->cotangents) {
    if (UseCount(q, v) == 0 &&
        std::find(q.outputs.begin(), q.outputs.end(), v) == q.outputs.end()) {
      q.inputs.erase(std::remove_if(q.inputs.begin(), q.inputs.end(),
                                    [&](const Input& in) { return in.name == v; }),
                     q.inputs.end());
    }
  }
  EnsureOutputs(q);
  if (!ProgramValid(q)) return false;
  p = std::move(q);
  return true;
}

bool MutateGradient(Program& p, Random& random, double grad_share) {
  if (!graph::HasGradients(p)) return AddGradient(p, random);
  switch (random.Below(5)) {
    case 0:
      return DropGradientInput(p, random);
    case 1:
      return AddGradientInput(p, random);
    case 2:
    case 3:
      return ChangeCotangent(p, random);
    default:
      return random.Chance(grad_share) ? AddGradient(p, random) : RemoveGradient(p, random);
  }
}

bool RepairGradient(Program& program, const std::vector<Node>& kept,
                    const std::set<std::string>& single_use, Node& node, ops::TypeEnv& types) {
  graph::GradCallOrError g = graph::ParseGradCall(node);
  if (!g.call) return false;
  for (const std::string& r : node.results) {
    if (types.count(r)) return false;
  }
  // Never differentiated through a random op.
  if (std::any_of(kept.begin(), kept.end(), IsRandomOp)) return false;
  GradCall fixed;
  fixed.listed_outputs = g.call->listed_outputs;
  for (size_t i = 0; i < g.call->outputs.size(); ++i) {
    const std::string& y = g.call->outputs[i];
    const std::string& v = g.call->cotangents[i];
    auto yt = types.find(y);
    if (yt == types.end() || !Differentiable(yt->second.dtype)) continue;
    auto vt = types.find(v);
    bool fits = vt != types.end() && Differentiable(vt->second.dtype) &&
                vt->second.shape == yt->second.shape &&
                graph::IsComplex(vt->second.dtype) == graph::IsComplex(yt->second.dtype);
    Input* in = FindInput(program, v);
    if (in != nullptr && single_use.count(v) && in->type != yt->second) {
      // A cotangent of its own follows its output's type, dtype included.
      in->type = yt->second;
      FitInput(*in);
      types[v] = in->type;
      fits = true;
    }
    if (!fits) continue;
    fixed.outputs.push_back(y);
    fixed.cotangents.push_back(v);
  }
  if (fixed.outputs.empty()) return false;
  const std::set<std::string> reached = Reaching(kept, fixed.outputs);
  std::vector<std::string> results;
  for (size_t k = 0; k < g.call->wrt.size(); ++k) {
    const std::string& x = g.call->wrt[k];
    const Input* in = FindInput(program, x);
    if (in == nullptr || !Differentiable(in->type.dtype) || !reached.count(x) ||
        !types.count(x)) {
      continue;
    }
    fixed.wrt.push_back(x);
    results.push_back(node.results[k]);
  }
  if (fixed.wrt.empty()) return false;
  const graph::SourceLoc loc = node.loc;
  node = graph::MakeGradNode(fixed, results);
  node.loc = loc;
  for (size_t k = 0; k < results.size(); ++k) types[results[k]] = types.at(fixed.wrt[k]);
  return true;
}

}  // namespace divfuzz::mutators
