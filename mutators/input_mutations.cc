#include "mutators/input_mutations.h"

#include <algorithm>
#include <vector>

#include "graph/materialize.h"
#include "graph/validate.h"
#include "mutators/mutator.h"
#include "mutators/node_builder.h"

namespace divfuzz::mutators {
namespace {

using graph::DType;
using graph::Input;
using graph::Layout;
using graph::Payload;

// The input checked on its own, as ValidateProgram checks it in a program.
bool InputValid(const Input& in) {
  graph::Program q;
  q.inputs = {in};
  q.inputs[0].loc = {};
  q.outputs = {in.name};
  return graph::ValidateProgram(q).ok();
}

Payload WithSeed(Payload::Kind kind, uint64_t seed, double param) {
  Payload p;
  p.kind = kind;
  p.seed = seed;
  p.a = param;
  return p;
}

Input* PickInput(graph::Program& p, Random& random) {
  if (p.inputs.empty()) return nullptr;
  return &p.inputs[random.Below(p.inputs.size())];
}

}  // namespace

bool MutateNumericPayload(graph::Program& p, Random& random) {
  Input* in = PickInput(p, random);
  if (in == nullptr) return false;
  const DType dtype = in->type.dtype;
  const bool real = graph::IsFloating(dtype) || graph::IsComplex(dtype);
  const std::vector<int64_t>& shape = in->type.shape;
  using K = Payload::Kind;
  std::vector<Payload> options = {
      WithSeed(K::kLimits, random.Seed(), 0),
      WithSeed(K::kEdges, random.Seed(), 0),
      WithSeed(K::kTies, random.Seed(), random.Pick(std::vector<double>{1, 2, 3, 5})),
      WithSeed(K::kDynamic, random.Seed(), random.Pick(std::vector<double>{4, 8, 16, 30, 60})),
      WithSeed(K::kPlanted, random.Seed(), 0),
  };
  if (real && shape.size() >= 2) {
    const int64_t m = shape[shape.size() - 2], n = shape.back();
    const int64_t k = std::min(m, n);
    std::vector<Payload> matrices = {
        WithSeed(K::kSingular, random.Seed(), 0),
        WithSeed(K::kNearSingular, random.Seed(), 0),
        WithSeed(K::kRankDeficient, random.Seed(),
                 static_cast<double>(k > 0 ? random.Range(0, k - 1) : 0)),
        WithSeed(K::kIllConditioned, random.Seed(),
                 random.Pick(std::vector<double>{1e2, 1e4, 1e6, 1e8, 1e12, 1e16})),
        WithSeed(K::kScaled, random.Seed(), random.Pick(std::vector<double>{4, 8, 16})),
    };
    if (m == n) matrices.push_back(WithSeed(K::kSpd, random.Seed(), 0));
    // Matrices are what these inputs are most often for (linalg, matmul).
    options = random.Chance(0.6) ? matrices : options;
  }
  Input candidate = *in;
  candidate.payload = random.Pick(options);
  if (!InputValid(candidate)) return false;
  *in = candidate;
  return true;
}

bool MutateLayout(graph::Program& p, Random& random) {
  Input* in = PickInput(p, random);
  if (in == nullptr) return false;
  const size_t rank = in->type.shape.size();
  std::vector<Layout> layouts = {Layout::kContiguous};
  if (rank >= 1) layouts.push_back(Layout::kStrided);
  if (rank >= 2) layouts.push_back(Layout::kTransposed);
  if (rank == 4) layouts.push_back(Layout::kChannelsLast);
  layouts.erase(std::remove(layouts.begin(), layouts.end(), in->layout), layouts.end());
  if (layouts.empty()) return false;
  in->layout = random.Pick(layouts);
  return true;
}

bool MutateShapeEdge(graph::Program& p, Random& random) {
  Input* in = PickInput(p, random);
  if (in == nullptr) return false;
  const std::vector<int64_t> old = in->type.shape;
  std::vector<int64_t> shape = old;
  bool channels_last = false;
  switch (random.Below(5)) {
    case 4:  // an NCHW image batch, laid out channels-last
      shape = {random.Range(1, 2), random.Pick(std::vector<int64_t>{2, 3, 4, 8}),
               random.Pick(std::vector<int64_t>{3, 4, 7}),
               random.Pick(std::vector<int64_t>{4, 5, 9})};
      channels_last = true;
      break;
    case 0:  // empty
      if (shape.empty()) shape = {0};
      shape[random.Below(shape.size())] = 0;
      break;
    case 1:  // 0-d
      shape.clear();
      break;
    case 2:  // a size-1 dim: broadcasts against the others
      if (shape.empty()) return false;
      shape[random.Below(shape.size())] = 1;
      break;
    default:  // one more leading size-1 dim
      if (shape.size() >= static_cast<size_t>(graph::kMaxRank)) return false;
      shape.insert(shape.begin(), 1);
      break;
  }
  if (shape == old) return false;
  const bool all = random.Chance(0.5);
  for (Input& other : p.inputs) {
    if (&other != in && !(all && other.type.shape == old)) continue;
    other.type.shape = shape;
    if (channels_last) other.layout = Layout::kChannelsLast;
  }
  FitPayloadsToTypes(p, random);
  return true;
}

bool MutateVectorSize(graph::Program& p, Random& random) {
  Input* in = PickInput(p, random);
  if (in == nullptr) return false;
  const std::vector<int64_t> chunks = graph::VectorChunks(in->type.dtype);
  const int64_t big = chunks.back(), small = chunks.front();
  // At least 32 elements and whole vector chunks before the scalar tail:
  // bugs of the vector loops vanish in the tail.
  const int64_t whole = random.Range(std::max<int64_t>(1, (32 + big - 1) / big), 3);
  const int64_t last = whole * big + random.Range(1, std::max<int64_t>(1, small - 1));
  const std::vector<int64_t> old = in->type.shape;
  std::vector<int64_t> shape = old.empty() ? std::vector<int64_t>{1} : old;
  shape.back() = last;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel > kMaxGeneratedNumel) {
    for (size_t i = 0; i + 1 < shape.size(); ++i) shape[i] = 1;
  }
  if (shape == old) return false;
  for (Input& other : p.inputs) {
    if (&other != in && other.type.shape != old) continue;
    other.type.shape = shape;
    if (other.payload.kind == Payload::Kind::kValues || random.Chance(0.7)) {
      other.payload = WithSeed(Payload::Kind::kPlanted, random.Seed(), 0);
    }
  }
  FitPayloadsToTypes(p, random);
  return true;
}

bool MutateInputNumerics(graph::Program& p, Random& random) {
  switch (random.Below(8)) {
    case 0:
    case 1:
    case 2:
      return MutateNumericPayload(p, random);
    case 3:
    case 4:
      return MutateLayout(p, random);
    case 5:
      return MutateShapeEdge(p, random);
    default:
      return MutateVectorSize(p, random);
  }
}

graph::Program SeasonInputs(graph::Program p, Random& random) {
  if (random.Chance(0.3)) MutateNumericPayload(p, random);
  if (random.Chance(0.15)) MutateLayout(p, random);
  if (random.Chance(0.15)) {
    graph::Program sized = p;
    if (MutateVectorSize(sized, random)) {
      std::optional<graph::Program> repaired = Repair(sized);
      if (repaired && repaired->nodes.size() == p.nodes.size()) return *repaired;
    }
  }
  return p;
}

void FitPayloadsToTypes(graph::Program& p, Random& random) {
  for (Input& in : p.inputs) {
    if (InputValid(in)) continue;
    Input layout_only = in;
    layout_only.layout = Layout::kContiguous;
    if (InputValid(layout_only)) {
      in.layout = Layout::kContiguous;
      continue;
    }
    Input planted = in;
    planted.payload = WithSeed(Payload::Kind::kPlanted, random.Seed(), 0);
    if (!InputValid(planted)) planted.layout = Layout::kContiguous;
    in = planted;
  }
}

}  // namespace divfuzz::mutators
