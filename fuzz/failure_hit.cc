#include "fuzz/failure_hit.h"

#include "absl/strings/str_cat.h"

namespace divfuzz::fuzz {

store::FindingHit FailureHit(const graph::Program& program, const ops::TypeEnv* types, int node,
                             const std::string& op, const std::string& kind,
                             const std::string& target, bool cuda_fault, bool reproduced) {
  store::FindingHit hit;
  hit.divergence_class = kind;
  hit.root_op = op.empty() ? "<unknown>" : op;
  hit.wrong_side = target.empty() ? "undecided" : target;
  hit.tier = "bug";
  hit.severity = kind;
  if (types != nullptr && node >= 0 && static_cast<size_t>(node) < program.nodes.size() &&
      !program.nodes[node].results.empty()) {
    if (auto t = types->find(program.nodes[node].results[0]); t != types->end()) {
      hit.dtype = std::string(graph::DTypeName(t->second.dtype));
    }
  }
  hit.signature =
      absl::StrCat(hit.root_op, "|", hit.dtype, "|", hit.divergence_class, "|", hit.wrong_side);
  hit.detail = {{"node", node},
                {"cuda_fault", cuda_fault},
                {"summary", absl::StrCat(kind, " in ", hit.root_op, " on ", hit.wrong_side,
                                         cuda_fault ? " (a CUDA fault)" : "",
                                         reproduced ? "" : " (did not recur in a fresh process)")}};
  return hit;
}

}  // namespace divfuzz::fuzz
