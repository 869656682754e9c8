#include "mutators/mutator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "graph/materialize.h"
#include "graph/printer.h"
#include "mutators/gradient_mutations.h"
#include "mutators/input_mutations.h"
#include "mutators/node_builder.h"
#include "ops/catalogue.h"
#include "ops/generic.h"
#include "ops/infer.h"

namespace divfuzz::mutators {
namespace {

using graph::DType;
using graph::Literal;
using graph::Program;

constexpr size_t kMaxNodes = 16;
// Inputs this small may be spelled out element by element to plant values.
constexpr int64_t kMaxExplicitNumel = 1024;
// A program with a gradient statement has this share of its mutations made
// to the statement (MutateGradient: one turn in five removes or adds one); a
// program without gets one at a fifth of it times grad_share, so mutation on
// its own keeps about grad_share of the programs with gradients.
constexpr double kGradMutationShare = 0.25;

template <typename F>
void ForEachRef(graph::Literal& l, const F& f) {
  if (l.kind == Literal::Kind::kValue) f(l);
  for (Literal& item : l.list) ForEachRef(item, f);
}

template <typename F>
void ForEachRef(const graph::Literal& l, const F& f) {
  if (l.kind == Literal::Kind::kValue) f(l);
  for (const Literal& item : l.list) ForEachRef(item, f);
}

std::vector<const ops::OpSpec*> OpsFor(DType dtype, bool one_sided = false) {
  std::vector<const ops::OpSpec*> out;
  for (const ops::OpSpec& s : ops::Catalogue()) {
    if (one_sided ? ops::OneSided(s, dtype) : ops::Has(s.dtypes, dtype)) out.push_back(&s);
  }
  return out;
}

// Appends one random op over the program's values (from `family`, or the one
// `op`, when not empty); false when none fit.
bool AppendRandomOp(Program& p, ops::TypeEnv& types, Random& random,
                    const std::string& family = "", const std::string& op = "") {
  NodeBuilder builder(p, types, random);
  const bool narrowed = !family.empty() || !op.empty();
  for (int attempt = 0; attempt < (narrowed ? 64 : 8); ++attempt) {
    DType dtype = RandomDType(random);
    // Prefer continuing a chain: the dtype of a value already there.
    if (!types.empty() && random.Chance(0.7)) {
      auto it = types.begin();
      std::advance(it, random.Below(types.size()));
      dtype = it->second.dtype;
    }
    // Now and then a pair some device rejects (a dtype gap, a one-sided
    // error): findings of their own, kept rare so they do not crowd out the rest.
    const bool one_sided = !narrowed && random.Chance(ops::kOneSidedShare);
    std::vector<const ops::OpSpec*> candidates = OpsFor(dtype, one_sided);
    if (one_sided) {
      if (!candidates.empty() && builder.Append(*random.Pick(candidates), dtype, true)) return true;
      continue;
    }
    if (!family.empty()) {
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const ops::OpSpec* s) { return s->family != family; }),
                       candidates.end());
    }
    if (!op.empty()) {
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const ops::OpSpec* s) { return s->Qualified() != op; }),
                       candidates.end());
    }
    // Curated and generic ops get half the picks each: the curated ones carry
    // value domains and policy hints, the generic ones the breadth.
    std::vector<const ops::OpSpec*> generic;
    for (const ops::OpSpec* s : candidates) {
      if (s->rule == ops::Rule::kGeneric) generic.push_back(s);
    }
    if (!generic.empty() && generic.size() < candidates.size()) {
      const bool pick_generic = random.Chance(0.5);
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const ops::OpSpec* s) {
                                        return (s->rule == ops::Rule::kGeneric) != pick_generic;
                                      }),
                       candidates.end());
    }
    if (candidates.empty()) continue;
    if (builder.Append(*random.Pick(candidates), dtype)) return true;
  }
  return false;
}

double SpecialValue(Random& random, DType dtype) {
  const double max = graph::MaxFinite(dtype);
  const double tiny = dtype == DType::kF64   ? 0x1p-1074
                      : dtype == DType::kF32 ? 0x1p-149
                      : dtype == DType::kF16 ? 0x1p-24
                                             : 0x1p-133;
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      tiny,
                                      -tiny,
                                      max,
                                      -max,
                                      max / 2,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::nan(""),
                                      1.0,
                                      -1.0,
                                      1e-30,
                                      0.5};
  return random.Pick(values);
}

double SpecialInteger(Random& random, DType dtype) {
  const std::vector<double> values = {0,
                                      1,
                                      -1,
                                      graph::MinValue(dtype),
                                      graph::MaxFinite(dtype),
                                      graph::MinValue(dtype) + 1,
                                      graph::MaxFinite(dtype) - 1};
  const double v = random.Pick(values);
  // 2^63 - 1 has no double; the largest double below 2^63 stands in for it.
  if (v >= 0x1p63) return std::nextafter(0x1p63, 0.0);
  return dtype == DType::kU8 && v < 0 ? 0 : v;
}

bool MutateValues(Program& p, Random& random) {
  if (p.inputs.empty()) return false;
  graph::Input& in = p.inputs[random.Below(p.inputs.size())];
  ops::TypeEnv scratch;
  NodeBuilder builder(p, scratch, random);
  const uint64_t r = random.Below(10);
  const bool floating = graph::IsFloating(in.type.dtype);
  if (r < 2) {
    in.payload.seed = random.Seed();
    return true;
  }
  if (r < 4 || in.type.Numel() > kMaxExplicitNumel || graph::IsComplex(in.type.dtype)) {
    in.payload = builder.RandomPayload(in.type.dtype, ops::Domain::kAny);
    return true;
  }
  // Spell the values out and plant a few special ones, or nudge one by an ulp.
  std::vector<double> v = graph::MaterializePayload(in);
  if (v.empty()) return false;
  const int count = static_cast<int>(random.Range(1, 3));
  for (int i = 0; i < count; ++i) {
    double& x = v[random.Below(v.size())];
    if (floating && r == 9 && std::isfinite(x)) {
      x = std::nextafter(static_cast<float>(x), random.Chance(0.5) ? INFINITY : -INFINITY);
    } else {
      x = floating ? SpecialValue(random, in.type.dtype) : SpecialInteger(random, in.type.dtype);
    }
  }
  if (in.type.dtype == DType::kBool) {
    for (double& x : v) x = x != 0;
  }
  in.payload = graph::Payload{};
  in.payload.kind = graph::Payload::Kind::kValues;
  in.payload.values = std::move(v);
  return true;
}

bool MutateInputType(Program& p, Random& random) {
  if (p.inputs.empty()) return false;
  graph::Input& in = p.inputs[random.Below(p.inputs.size())];
  if (random.Chance(0.5) && graph::IsFloating(in.type.dtype)) {
    const std::vector<DType> floats = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64};
    in.type.dtype = random.Pick(floats);
  } else if (!in.type.shape.empty()) {
    int64_t& d = in.type.shape[random.Below(in.type.shape.size())];
    const std::vector<int64_t> sizes = {1, 2, 3, 4, 15, 16, 17, 31, 32, 33};
    d = random.Pick(sizes);
    if (in.type.Numel() > kMaxGeneratedNumel) d = 1;
  } else {
    in.type.shape = {random.Pick(std::vector<int64_t>{2, 16, 33})};
  }
  if (in.payload.kind == graph::Payload::Kind::kValues) {
    in.payload = graph::Payload{graph::Payload::Kind::kNormal, {}, random.Seed(), 0, 1};
  }
  return true;
}

bool DeleteNode(Program& p, Random& random) {
  if (p.nodes.size() < 2) return false;
  const size_t i = random.Below(p.nodes.size());
  // A gradient statement goes by its own mutation, at grad_share's rate.
  if (graph::IsGradNode(p.nodes[i])) return false;
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return false;
  // Values defined before node i, to stand in for its results.
  std::map<std::string, graph::TensorType> before;
  for (const graph::Input& in : p.inputs) before[in.name] = in.type;
  for (size_t k = 0; k < i; ++k) {
    for (const std::string& r : p.nodes[k].results) before[r] = types->at(r);
  }
  std::map<std::string, std::string> replacement;
  for (const std::string& r : p.nodes[i].results) {
    for (const auto& [name, type] : before) {
      if (type == types->at(r)) {
        replacement[r] = name;
        break;
      }
    }
  }
  p.nodes.erase(p.nodes.begin() + static_cast<long>(i));
  for (size_t k = i; k < p.nodes.size(); ++k) {
    for (graph::Argument& a : p.nodes[k].args) {
      ForEachRef(a.value, [&](Literal& l) {
        if (auto it = replacement.find(l.s); it != replacement.end()) l.s = it->second;
      });
    }
  }
  return true;
}

bool ReplaceOp(Program& p, Random& random) {
  if (p.nodes.empty()) return false;
  graph::Node& node = p.nodes[random.Below(p.nodes.size())];
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (spec == nullptr || !types.ok() || node.args.empty()) return false;
  const graph::Literal* first = nullptr;
  for (const graph::Argument& a : node.args) {
    if (a.value.kind == Literal::Kind::kValue) {
      first = &a.value;
      break;
    }
  }
  if (first == nullptr || !types->count(first->s)) return false;
  const DType dtype = types->at(first->s).dtype;
  // Generic ops stand in for any op over the same tensor operands.
  if (spec->rule == ops::Rule::kGeneric || random.Chance(0.3)) {
    std::vector<const ops::OpSpec*> generic;
    for (const ops::OpSpec& s : ops::Catalogue()) {
      if (s.rule == ops::Rule::kGeneric && &s != spec && ops::Has(s.dtypes, dtype)) {
        generic.push_back(&s);
      }
    }
    NodeBuilder builder(p, *types, random);
    for (int attempt = 0; attempt < 8 && !generic.empty(); ++attempt) {
      if (builder.Rebind(*random.Pick(generic), node)) return true;
    }
    if (spec->rule == ops::Rule::kGeneric) return false;
  }
  std::vector<const ops::OpSpec*> candidates;
  for (const ops::OpSpec& s : ops::Catalogue()) {
    if (s.rule == spec->rule && &s != spec && ops::Has(s.dtypes, dtype)) candidates.push_back(&s);
  }
  if (candidates.empty()) return false;
  const ops::OpSpec* next = random.Pick(candidates);
  node.op = std::string(next->name);
  node.overload = std::string(next->overload);
  NodeBuilder(p, *types, random).RegenerateAttributes(*next, node);
  return true;
}

bool ChangeAttributes(Program& p, Random& random) {
  if (p.nodes.empty()) return false;
  graph::Node& node = p.nodes[random.Below(p.nodes.size())];
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (spec == nullptr || !types.ok()) return false;
  NodeBuilder(p, *types, random).RegenerateAttributes(*spec, node);
  return true;
}

bool InsertOp(Program& p, Random& random) {
  if (p.nodes.size() >= kMaxNodes) return false;
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return false;
  return AppendRandomOp(p, *types, random);
}

}  // namespace

std::vector<std::string> Leaves(const Program& program) {
  std::set<std::string> used;
  for (const graph::Node& n : program.nodes) {
    for (const graph::Argument& a : n.args) {
      ForEachRef(a.value, [&](const Literal& l) { used.insert(l.s); });
    }
  }
  std::vector<std::string> leaves;
  for (const graph::Node& n : program.nodes) {
    for (const std::string& r : n.results) {
      if (!used.count(r)) leaves.push_back(r);
    }
  }
  return leaves;
}

std::optional<Program> Repair(Program program) {
  ops::TypeEnv types;
  for (const graph::Input& in : program.inputs) types[in.name] = in.type;
  // Inputs one node reads: a cotangent of its own may be retyped.
  std::map<std::string, int> reads;
  for (const graph::Node& node : program.nodes) {
    for (const std::string& u : node.Uses()) ++reads[u];
  }
  std::set<std::string> single_use;
  for (const graph::Input& in : program.inputs) {
    if (reads[in.name] == 1) single_use.insert(in.name);
  }
  std::vector<graph::Node> kept;
  for (graph::Node& node : program.nodes) {
    if (graph::IsGradNode(node)) {
      if (RepairGradient(program, kept, single_use, node, types)) kept.push_back(std::move(node));
      continue;
    }
    const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
    if (spec == nullptr) continue;
    absl::StatusOr<std::vector<graph::TensorType>> out = ops::InferNode(*spec, node, types);
    if (!out.ok() || out->size() != node.results.size()) continue;
    bool defined = true;
    for (const graph::Argument& a : node.args) {
      ForEachRef(a.value, [&](const Literal& l) { defined = defined && types.count(l.s) > 0; });
    }
    bool fresh = true;
    for (const std::string& r : node.results) fresh = fresh && types.count(r) == 0;
    if (!defined || !fresh) continue;
    for (size_t i = 0; i < out->size(); ++i) types[node.results[i]] = (*out)[i];
    kept.push_back(std::move(node));
  }
  if (kept.empty()) return std::nullopt;
  program.nodes = std::move(kept);
  std::set<std::string> used;
  for (const graph::Node& n : program.nodes) {
    for (const graph::Argument& a : n.args) {
      ForEachRef(a.value, [&](const Literal& l) { used.insert(l.s); });
    }
  }
  std::vector<graph::Input> inputs;
  for (graph::Input& in : program.inputs) {
    if (used.count(in.name)) inputs.push_back(std::move(in));
  }
  program.inputs = std::move(inputs);
  std::vector<std::string> outputs;
  std::set<std::string> seen;
  std::set<std::string> results;
  for (const graph::Node& n : program.nodes) results.insert(n.results.begin(), n.results.end());
  for (const std::string& o : program.outputs) {
    if (results.count(o) && seen.insert(o).second) outputs.push_back(o);
  }
  for (const std::string& o : Leaves(program)) {
    if (seen.insert(o).second) outputs.push_back(o);
  }
  program.outputs = std::move(outputs);
  return program;
}

Program Generate(uint64_t seed, const GenerateOptions& options) {
  Random random(seed);
  bool gradient_wanted = false;
  int gradient_tries = 0;
  for (int tries = 0;; ++tries) {
    // A family none of whose ops fits anything gives up with no nodes.
    if ((!options.family.empty() || !options.op.empty()) && tries == 50) return Program{};
    Program p;
    ops::TypeEnv types;
    const int want = static_cast<int>(random.Range(1, std::max(1, options.max_nodes)));
    for (int i = 0; i < want; ++i) AppendRandomOp(p, types, random, options.family, options.op);
    std::optional<Program> repaired = Repair(std::move(p));
    if (!repaired) continue;
    Program seasoned = SeasonInputs(*std::move(repaired), random);
    // A program drawn for a gradient that has nothing to differentiate (no
    // floating result reached by a floating input) is drawn again, a few times.
    if (options.grad_share > 0 && (gradient_wanted || random.Chance(options.grad_share))) {
      gradient_wanted = true;
      if (AddGradient(seasoned, random) || ++gradient_tries >= 4) return seasoned;
      continue;
    }
    return seasoned;
  }
}

namespace {

// Share 0 is forward only: a gradient program (the seed corpus has them)
// loses its statements, else half a --grad_share=0 campaign's executions
// still ran a backward (session 44 measured 50.6%). Whether none is left.
bool StripGradients(Program& p, Random& random) {
  while (graph::HasGradients(p) && RemoveGradient(p, random)) {
  }
  return !graph::HasGradients(p);
}

}  // namespace

Program Mutate(const Program& program, uint64_t seed, const MutateOptions& options) {
  Random random(seed);
  if (options.grad_share <= 0 && graph::HasGradients(program)) {
    Program p = program;
    if (StripGradients(p, random)) return p;
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    Program p = program;
    bool changed = false;
    const bool gradients = graph::HasGradients(p);
    if (gradients ? random.Chance(kGradMutationShare)
                  : options.grad_share > 0 &&
                        random.Chance(kGradMutationShare / 5 * options.grad_share)) {
      changed = MutateGradient(p, random, options.grad_share);
      // Valid as it stands: Repair would only reorder the outputs.
      if (changed && graph::PrintProgram(p) != graph::PrintProgram(program)) return p;
      continue;
    }
    const uint64_t r = random.Below(100);
    if (r < 25) {
      changed = InsertOp(p, random);
    } else if (r < 35) {
      changed = DeleteNode(p, random);
    } else if (r < 50) {
      changed = ReplaceOp(p, random);
    } else if (r < 60) {
      changed = ChangeAttributes(p, random);
    } else if (r < 70) {
      changed = MutateInputType(p, random);
    } else if (r < 85) {
      changed = MutateValues(p, random);
    } else {
      changed = MutateInputNumerics(p, random);
    }
    if (!changed) continue;
    FitPayloadsToTypes(p, random);
    std::optional<Program> repaired = Repair(std::move(p));
    // A mutation that changed nothing visible (a new seed for a fill) is retried.
    if (repaired && graph::PrintProgram(*repaired) != graph::PrintProgram(program) &&
        (!graph::HasGradients(*repaired) || ProgramValid(*repaired))) {
      return *repaired;
    }
  }
  GenerateOptions fresh;
  fresh.grad_share = options.grad_share;
  return Generate(random.Seed(), fresh);
}

Program CrossOver(const Program& a, const Program& b, uint64_t seed, const MutateOptions& options) {
  Random random(seed);
  if (a.nodes.size() + b.nodes.size() > kMaxNodes || b.nodes.empty()) {
    return Mutate(a, seed, options);
  }
  Program out = a;
  std::set<std::string> taken;
  for (const graph::Input& in : a.inputs) taken.insert(in.name);
  for (const graph::Node& n : a.nodes) taken.insert(n.results.begin(), n.results.end());
  std::map<std::string, std::string> rename;
  auto fresh = [&](const std::string& name) {
    std::string candidate = name;
    for (int i = 0; taken.count(candidate); ++i) candidate = absl::StrCat(name, "_", i);
    taken.insert(candidate);
    rename[name] = candidate;
    return candidate;
  };
  for (graph::Input in : b.inputs) {
    in.name = fresh(in.name);
    out.inputs.push_back(std::move(in));
  }
  const size_t take = 1 + random.Below(b.nodes.size());
  absl::StatusOr<ops::TypeEnv> a_types = ops::InferProgram(a);
  absl::StatusOr<ops::TypeEnv> b_types = ops::InferProgram(b);
  for (size_t i = 0; i < take; ++i) {
    graph::Node n = b.nodes[i];
    for (graph::Argument& arg : n.args) {
      ForEachRef(arg.value, [&](Literal& l) {
        // Sometimes feed a's value of the same type: the graphs join.
        if (a_types.ok() && b_types.ok() && random.Chance(0.3)) {
          for (const auto& [name, type] : *a_types) {
            if (b_types->count(l.s) && type == b_types->at(l.s)) {
              l.s = name;
              return;
            }
          }
        }
        if (auto it = rename.find(l.s); it != rename.end()) l.s = it->second;
      });
    }
    for (std::string& r : n.results) r = fresh(r);
    out.nodes.push_back(std::move(n));
  }
  // a's outputs stay where it differentiates some (they are no leaves).
  if (!graph::HasGradients(a)) out.outputs.clear();
  std::optional<Program> repaired = Repair(std::move(out));
  if (repaired && graph::HasGradients(*repaired) && !ProgramValid(*repaired)) repaired.reset();
  if (repaired && options.grad_share <= 0 && !StripGradients(*repaired, random)) repaired.reset();
  return repaired ? *repaired : Mutate(a, seed, options);
}

}  // namespace divfuzz::mutators
