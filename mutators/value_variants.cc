#include "mutators/value_variants.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/stable_hash.h"
#include "ops/catalogue.h"

namespace divfuzz::mutators {
namespace {

using graph::Literal;

bool Seeded(const graph::Payload& p) {
  return p.kind != graph::Payload::Kind::kFill && p.kind != graph::Payload::Kind::kValues;
}

uint64_t MixSeed(uint64_t seed, int k) {
  const uint64_t parts[2] = {seed, static_cast<uint64_t>(k)};
  return graph::Fnv1a64(parts, sizeof(parts));
}

// A prefix no name of the program starts with, for the variant inputs.
std::string FreshPrefix(const graph::Program& p) {
  std::set<std::string> names;
  for (const graph::Input& in : p.inputs) names.insert(in.name);
  for (const graph::Node& n : p.nodes) names.insert(n.results.begin(), n.results.end());
  std::string prefix = "vv";
  for (bool clash = true; clash;) {
    clash = false;
    for (const std::string& n : names) clash = clash || absl::StartsWith(n, prefix);
    if (clash) prefix += "_";
  }
  return prefix;
}

bool TakesAValueList(const graph::Node& node) {
  for (const graph::Argument& a : node.args) {
    for (const Literal& item : a.value.list) {
      if (item.kind == Literal::Kind::kValue) return true;
    }
  }
  return false;
}

// Variants 1..n of `program` stacked in front (see BatchVariants).
graph::Program Batched(const graph::Program& program, int n, size_t rank,
                       const std::string& prefix) {
  graph::Program b;
  b.version = program.version;
  for (const graph::Input& in : program.inputs) {
    std::vector<Literal> parts;
    for (int k = 1; k <= n; ++k) {
      graph::Input v = in;
      v.name = absl::StrCat(prefix, k, "_", in.name);
      v.loc = {};
      if (Seeded(v.payload)) v.payload.seed = MixSeed(in.payload.seed, k);
      parts.push_back(Literal::Value(v.name));
      b.inputs.push_back(std::move(v));
    }
    const bool pad = in.type.shape.size() < rank;
    graph::Node stack;
    stack.op = "aten::stack";
    stack.results = {pad ? absl::StrCat(prefix, "s_", in.name) : in.name};
    stack.args = {{"", Literal::List(std::move(parts))}, {"", Literal::Int(0)}};
    b.nodes.push_back(stack);
    if (pad) {
      std::vector<Literal> shape = {Literal::Int(n)};
      for (size_t d = in.type.shape.size(); d < rank; ++d) shape.push_back(Literal::Int(1));
      for (int64_t d : in.type.shape) shape.push_back(Literal::Int(d));
      graph::Node reshape;
      reshape.op = "aten::reshape";
      reshape.results = {in.name};
      reshape.args = {{"", Literal::Value(stack.results[0])}, {"", Literal::List(std::move(shape))}};
      b.nodes.push_back(std::move(reshape));
    }
  }
  for (graph::Node node : program.nodes) {
    node.loc = {};
    b.nodes.push_back(std::move(node));
  }
  b.outputs = program.outputs;
  return b;
}

}  // namespace

graph::Program Variant(const graph::Program& program, int k) {
  graph::Program out = program;
  if (k == 0) return out;
  for (graph::Input& in : out.inputs) {
    if (Seeded(in.payload)) in.payload.seed = MixSeed(in.payload.seed, k);
  }
  return out;
}

int VariantBatch::VariantOf(const std::string& value, long long element) const {
  auto it = types.find(value);
  if (element < 0 || it == types.end() || count <= 0) return 0;
  const int64_t per = it->second.Numel() / count;
  if (per <= 0 || element >= per * count) return 0;
  return static_cast<int>(element / per) + 1;
}

absl::StatusOr<VariantBatch> BatchVariants(const graph::Program& program,
                                           const ops::TypeEnv& types, int count) {
  if (count < 1) return absl::InvalidArgumentError("no variants to batch");
  // A node batched over leading dims might, with a dim argument, work along
  // the new one where a dim of the program has its size: the types are then
  // checked for two batch sizes, which cannot both coincide.
  bool leading = false;
  for (const graph::Node& node : program.nodes) {
    const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
    if (spec == nullptr || (spec->hints & (ops::kPointwise | ops::kBatchesLeadingDims)) == 0 ||
        TakesAValueList(node)) {
      return absl::FailedPreconditionError(absl::StrCat(
          node.QualifiedName(), " is neither pointwise nor batched over leading dims"));
    }
    leading = leading || (spec->hints & ops::kPointwise) == 0;
  }
  size_t rank = 0, zero_d = 0;
  bool seeded = false;
  for (const graph::Input& in : program.inputs) {
    if (in.layout != graph::Layout::kContiguous) {
      return absl::FailedPreconditionError(absl::StrCat("%", in.name, " is not contiguous"));
    }
    rank = std::max(rank, in.type.shape.size());
    zero_d += in.type.shape.empty() ? 1 : 0;
    seeded = seeded || Seeded(in.payload);
  }
  if (!seeded) return absl::FailedPreconditionError("no input has a seeded payload");
  // A 0-d operand beside a dimensioned one does not take part in dtype
  // promotion; stacked, it would.
  if (zero_d > 0 && zero_d < program.inputs.size()) {
    return absl::FailedPreconditionError("0-d inputs beside dimensioned ones");
  }

  const std::string prefix = FreshPrefix(program);
  VariantBatch batch;
  batch.count = count;
  for (const int n : leading ? std::vector<int>{count + 1, count} : std::vector<int>{count}) {
    graph::Program b = Batched(program, n, rank, prefix);
    absl::StatusOr<ops::TypeEnv> batched = ops::InferProgram(b);
    if (!batched.ok()) return batched.status();
    // Every value must be the program's own with the leading dim (and the
    // 1s that broadcasting against a padded input adds): else some node does
    // not treat the variants apart.
    for (const auto& [name, t] : types) {
      auto it = batched->find(name);
      const graph::TensorType& t0 = t;
      const auto own = [&](const std::vector<int64_t>& s) {
        if (s.size() < t0.shape.size() + 1 || s[0] != n) return false;
        const size_t ones = s.size() - 1 - t0.shape.size();
        for (size_t d = 1; d <= ones; ++d) {
          if (s[d] != 1) return false;
        }
        return std::equal(t0.shape.begin(), t0.shape.end(), s.begin() + 1 + ones);
      };
      if (it == batched->end() || it->second.dtype != t.dtype || !own(it->second.shape)) {
        return absl::FailedPreconditionError(
            absl::StrCat("%", name, " is not its own type with a leading dim once batched"));
      }
    }
    batch.program = std::move(b);
    batch.types = *std::move(batched);
  }
  return batch;
}

}  // namespace divfuzz::mutators
