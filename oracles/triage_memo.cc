#include "oracles/triage_memo.h"

#include <functional>
#include <set>
#include <string_view>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles {
namespace {

// A tensor's dtype, sizes, strides and its bytes' hash.
void AppendTensor(std::string* key, const at::Tensor& t) {
  if (!t.defined()) {
    absl::StrAppend(key, "undefined;");
    return;
  }
  absl::StrAppend(key, c10::toString(t.scalar_type()), t.sizes().vec().size(), ":");
  for (int64_t v : t.sizes()) absl::StrAppend(key, v, ",");
  for (int64_t v : t.strides()) absl::StrAppend(key, v, ",");
  const at::Tensor c = t.device().is_cpu() ? t.contiguous() : t.cpu().contiguous();
  // The library's string hash reads words, not bytes: this runs for every
  // root of every execution.
  const std::string_view bytes(static_cast<const char*>(c.data_ptr()), c.nbytes());
  absl::StrAppend(key, "#", std::hash<std::string_view>{}(bytes), ";");
}

void AppendSide(std::string* key, const graph::Program& program, int node,
                const exec::RunResult& r) {
  for (const auto& [name, t] : NodeInputs(program, node, r)) {
    absl::StrAppend(key, name, "=");
    AppendTensor(key, t);
  }
  if (static_cast<size_t>(node) >= r.nodes.size()) return;
  const exec::NodeResult& n = r.nodes[node];
  if (n.error) absl::StrAppend(key, "error:", n.error->message, ";");
  for (const at::Tensor& t : n.outputs) AppendTensor(key, t);
  for (const at::Tensor& t : n.exact) AppendTensor(key, t);
  for (const auto& [name, t] : n.value_grads) {
    absl::StrAppend(key, "d", name, "=");
    AppendTensor(key, t);
  }
  // A float64 side's sums before rounding decide the engine's accumulation.
  for (const auto& [name, t] : n.value_grads_exact) {
    absl::StrAppend(key, "D", name, "=");
    AppendTensor(key, t);
  }
  absl::StrAppend(key, "\n");
}

}  // namespace

std::optional<std::string> TriageMemo::KeyOf(const graph::Program& program, int node,
                                             const std::string& verdict_targets,
                                             const exec::RunResult& a, const exec::RunResult& b) {
  if (node < 0 || static_cast<size_t>(node) >= program.nodes.size()) return std::nullopt;
  for (int j = 0; j < node; ++j) {
    const std::string& op = program.nodes[j].op;
    if (!op.empty() && op.back() == '_') return std::nullopt;
  }
  // The nodes the root reads, transitively, walking back from it.
  std::set<std::string> needed;
  std::vector<int> slice;
  for (int j = node; j >= 0; --j) {
    const graph::Node& n = program.nodes[j];
    bool used = j == node;
    for (const std::string& r : n.results) used = used || needed.count(r) > 0;
    if (!used) continue;
    slice.push_back(j);
    for (const std::string& u : n.Uses()) needed.insert(u);
  }
  graph::Program part;
  for (const graph::Input& in : program.inputs) {
    if (needed.count(in.name)) part.inputs.push_back(in);
  }
  std::string indices;
  for (auto it = slice.rbegin(); it != slice.rend(); ++it) {
    part.nodes.push_back(program.nodes[*it]);
    absl::StrAppend(&indices, *it, ",");
  }
  part.outputs = program.nodes[node].results;
  std::string key = absl::StrCat(verdict_targets, "\n", indices, "\n", graph::PrintProgram(part));
  AppendSide(&key, program, node, a);
  AppendSide(&key, program, node, b);
  return key;
}

TriageMemo::Hash128 TriageMemo::HashOf(const std::string& key) {
  // Two independent 64-bit hashes: a collision would hand one root another's
  // verdict, so 128 bits, not a table's 64.
  uint64_t fnv = 1469598103934665603ull;
  for (unsigned char c : key) fnv = (fnv ^ c) * 1099511628211ull;
  return {static_cast<uint64_t>(std::hash<std::string>{}(key)), fnv};
}

const Divergence* TriageMemo::Find(const std::string& key) {
  auto it = judged_roots_.find(HashOf(key));
  if (it == judged_roots_.end()) return nullptr;
  ++reused_;
  return &it->second;
}

void TriageMemo::Put(const std::string& key, const Divergence& judged) {
  if (judged_roots_.size() >= capacity_) judged_roots_.clear();
  judged_roots_[HashOf(key)] = judged;
  ++judged_;
}

}  // namespace divfuzz::oracles
