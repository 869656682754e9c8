// documented_nondeterminism: kernels PyTorch documents as nondeterministic on
// CUDA. Judged between two runs of one target (MarkNondeterminism, called by the
// fuzzing harness and the reducer), never between targets: its entry in
// MatchExpectedRule's table matches nothing.
#include "oracles/rules/rule.h"

#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/target.h"

namespace divfuzz::oracles {
namespace {

using rules::Accumulates;
using rules::BaseName;

// The lists of torch.use_deterministic_algorithms: CUDA kernels that add with
// atomics in whatever order the threads arrive, or pick among equal values.
bool DocumentedNondeterministicOnCuda(const graph::Node& node) {
  static const std::set<std::string> kAlways = {"scatter_add",
                                                "scatter_reduce",
                                                "index_add",
                                                "index_reduce",
                                                "embedding_bag",
                                                "_embedding_bag",
                                                "histc",
                                                "bincount",
                                                "convolution",
                                                "conv1d",
                                                "conv2d",
                                                "conv3d",
                                                "conv_transpose1d",
                                                "conv_transpose2d",
                                                "conv_transpose3d",
                                                "_convolution",
                                                "cudnn_convolution",
                                                "kthvalue",
                                                "median",
                                                "nanmedian"};
  const std::string base = BaseName(node.op);
  return kAlways.count(base) > 0 ||
         ((base == "index_put" || base == "_index_put_impl" || base == "put") &&
          Accumulates(node, 3));
}

}  // namespace

std::optional<RuleMatch> DocumentedNondeterminism(const graph::Node& node, exec::Target target,
                                                  const Policy& policy) {
  if (!policy.rules.documented_nondeterminism || target != exec::Target::kCuda) {
    return std::nullopt;
  }
  if (!DocumentedNondeterministicOnCuda(node)) return std::nullopt;
  return RuleMatch{"documented_nondeterminism",
                   absl::StrCat(node.op,
                                " on CUDA is documented as nondeterministic "
                                "(torch.use_deterministic_algorithms)")};
}

bool MayVaryBetweenRuns(const graph::Node& node) {
  if (DocumentedNondeterministicOnCuda(node)) return true;
  static const std::set<std::string> kIndexedWrites = {
      "put",     "index_put",    "_index_put_impl", "index_copy",
      "scatter", "max_unpool2d", "max_unpool3d"};
  // Seen varying between identical runs on the CPU: linalg_lstsq's last bits
  // and its rank (its gelsy driver reads its pivot buffer uninitialized,
  // pytorch#187411; exec/malloc_perturb.h).
  static const std::set<std::string> kSeenToVary = {"linalg_lstsq"};
  const std::string base = BaseName(node.op);
  return kIndexedWrites.count(base) > 0 || kSeenToVary.count(base) > 0;
}

void MarkNondeterminism(Divergence& d, const graph::Node& node, exec::Target target,
                        const Policy& policy, const std::string& note) {
  d.cls = DivergenceClass::kNondeterminism;
  d.wrong_side = std::string(exec::TargetName(target));
  d.tier = "divergence";
  d.expected_rule.clear();
  d.reason =
      absl::StrCat(d.wrong_side, " gives different results for the same program twice", note);
  if (std::optional<RuleMatch> m = DocumentedNondeterminism(node, target, policy)) {
    d.tier = "expected";
    d.expected_rule = m->rule;
    absl::StrAppend(&d.reason, ": ", m->reason);
  }
}

namespace rules {

std::optional<RuleMatch> documented_nondeterminism(const Context&) { return std::nullopt; }

}  // namespace rules
}  // namespace divfuzz::oracles
