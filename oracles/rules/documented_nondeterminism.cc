// documented_nondeterminism: kernels PyTorch documents as nondeterministic on
// CUDA. Judged between two runs of one target (MarkNondeterminism, called by the
// fuzzing harness and the reducer), never between targets: its entry in
// MatchExpectedRule's table matches nothing.
//
// It rests on torch.use_deterministic_algorithms' documentation: "When
// enabled, operations will use deterministic algorithms when available, and
// if only nondeterministic algorithms are available they will throw a
// :class:`RuntimeError` when called.", and the ops' own note: "This operation
// may behave nondeterministically when given tensors on a CUDA device."
#include "oracles/rules/rule.h"

#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/target.h"
#include "graph/gradient.h"

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

// torch.use_deterministic_algorithms' backward kernels on CUDA: those it
// lists as raising when determinism is asked for, and those it makes
// deterministic only on request (index_add/scatter_add under the hood).
bool BackwardNondeterministicOnCuda(const graph::Node& node) {
  static const std::set<std::string> kBackward = {
      "embedding", "embedding_bag", "_embedding_bag", "index_select", "gather", "take", "index",
      "repeat_interleave", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
      "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
      "_adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d", "avg_pool3d",
      "max_pool3d", "max_pool3d_with_indices", "fractional_max_pool2d", "fractional_max_pool3d",
      "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
      "replication_pad2d", "replication_pad3d", "pad", "ctc_loss", "nll_loss", "nll_loss2d",
      "nll_loss_nd", "cross_entropy_loss", "interpolate", "put", "index_put", "_index_put_impl",
      "scatter_reduce", "index_reduce", "kthvalue", "median", "nanmedian", "cumsum", "cumprod"};
  const std::string base = BaseName(node.op);
  return kBackward.count(base) > 0 || base.rfind("upsample_", 0) == 0 ||
         DocumentedNondeterministicOnCuda(node);
}

// A gradient statement's backward runs the backward kernels of every forward
// node before it.
bool GradientMayVaryOnCuda(const graph::Program& program, int index) {
  for (int k = 0; k < index && k < static_cast<int>(program.nodes.size()); ++k) {
    if (!graph::IsGradNode(program.nodes[k]) && BackwardNondeterministicOnCuda(program.nodes[k])) {
      return true;
    }
  }
  return false;
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

bool MayVaryBetweenRuns(const graph::Program& program, int index) {
  if (index < 0 || static_cast<size_t>(index) >= program.nodes.size()) return false;
  const graph::Node& node = program.nodes[index];
  return graph::IsGradNode(node) ? GradientMayVaryOnCuda(program, index) : MayVaryBetweenRuns(node);
}

void MarkNondeterminism(Divergence& d, const graph::Program& program, int index,
                        exec::Target target, const Policy& policy, const std::string& note) {
  const graph::Node& node = program.nodes[index];
  MarkNondeterminism(d, node, target, policy, note);
  if (!graph::IsGradNode(node) || d.tier == "expected") return;
  if (policy.rules.documented_nondeterminism && target == exec::Target::kCuda &&
      GradientMayVaryOnCuda(program, index)) {
    d.tier = "expected";
    d.expected_rule = "documented_nondeterminism";
    absl::StrAppend(&d.reason, ": a backward kernel of this gradient on CUDA is documented as "
                               "nondeterministic (torch.use_deterministic_algorithms)");
  }
}

namespace rules {

std::optional<RuleMatch> documented_nondeterminism(const Context&) { return std::nullopt; }

}  // namespace rules
}  // namespace divfuzz::oracles
