#include "minimize/ablation.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "exec/cuda_variants.h"
#include "ops/catalogue.h"

namespace divfuzz::minimize {
namespace {

bool IsCuda(exec::Target t) { return t == exec::Target::kCuda || t == exec::Target::kCudaF64; }

std::string LibraryOf(exec::Target t) { return exec::VariantLibraries(t.variants()); }

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The libraries of the rows with `outcome` other than row 0: "MAGMA, cuBLASLt".
std::vector<std::string> Libraries(const std::vector<AblationRow>& rows,
                                   AblationRow::Outcome outcome) {
  std::vector<std::string> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].outcome == outcome) out.push_back(rows[i].library);
  }
  return out;
}

}  // namespace

absl::string_view OutcomeText(AblationRow::Outcome o) {
  switch (o) {
    case AblationRow::Outcome::kWrong:
      return "wrong";
    case AblationRow::Outcome::kMatches:
      return "matches the witness";
    case AblationRow::Outcome::kRaises:
      return "raises";
    case AblationRow::Outcome::kOther:
      return "diverges otherwise";
    case AblationRow::Outcome::kNotRun:
      return "not run";
  }
  return "?";
}

std::optional<exec::Target> AblationSide(const oracles::Divergence& d, exec::Target a,
                                         exec::Target b) {
  if (d.cls == oracles::DivergenceClass::kNondeterminism) return std::nullopt;
  if (d.tier != "bug" && d.tier != "divergence") return std::nullopt;
  for (exec::Target t : {a, b}) {
    if (!IsCuda(t)) continue;
    const bool blamed = d.wrong_side == exec::TargetName(t) || d.wrong_side == "both" ||
                        d.wrong_side == "undecided";
    // Two CUDA sides: the one blamed.
    if (blamed && (d.wrong_side == exec::TargetName(t) || !(IsCuda(a) && IsCuda(b)))) return t;
  }
  return std::nullopt;
}

std::vector<exec::Target> AblationTargets(exec::Target side, uint32_t op_kernels) {
  std::vector<exec::Target> out;
  auto add = [&](exec::Target t) {
    if (t.Same(side)) return;
    for (exec::Target o : out) {
      if (o.Same(t)) return;
    }
    out.push_back(t);
  };
  if (side.variants() != 0) add(exec::Target(side.base()));
  for (const exec::CudaVariant* v : exec::VariantsChanging(op_kernels)) {
    exec::VariantSet keep = 0;  // the side's switches of other groups
    for (const exec::CudaVariant& row : exec::CudaVariants()) {
      if ((side.variants() & exec::VariantBit(row)) && row.group != v->group) {
        keep |= exec::VariantBit(row);
      }
    }
    if (absl::StatusOr<exec::Target> t =
            exec::WithVariants(exec::Target(side.base(), keep), exec::VariantBit(*v));
        t.ok()) {
      add(*t);
    }
  }
  return out;
}

std::string AblationConclusion(const std::vector<AblationRow>& rows) {
  using O = AblationRow::Outcome;
  if (rows.empty()) return "";
  const std::vector<std::string> wrong = Libraries(rows, O::kWrong);
  const std::vector<std::string> match = Libraries(rows, O::kMatches);
  int run = 0;
  for (size_t i = 1; i < rows.size(); ++i) run += rows[i].outcome != O::kNotRun;
  if (run == 0) return "no variant could run here (they need a CUDA device): rerun on a GPU host";
  if (rows[0].outcome != O::kWrong) {
    return absl::StrCat("the finding's own target is ", OutcomeText(rows[0].outcome),
                        " here: the ablation is inconclusive");
  }
  if (!match.empty() && !wrong.empty()) {
    return absl::StrCat(absl::StrJoin(match, ", "), " ", match.size() == 1 ? "matches" : "match",
                        " the witness where ", rows[0].library, " and ",
                        absl::StrJoin(wrong, ", "), " are wrong: the defect is in the path of ",
                        absl::StrJoin(wrong, ", "), ", not in ", absl::StrJoin(match, ", "));
  }
  if (!match.empty()) {
    // A switch is a preference PyTorch may overrule per op: torch 2.11 runs
    // cuSOLVER's SVD under the MAGMA preference (its Vh then comes back
    // transposed, session 33), so the table proves the switch, not the vendor.
    const std::string caveat =
        rows[0].library == "default libraries"
            ? ""
            : " (the switch sets PyTorch's preference; PyTorch may still run another library for "
              "this op under it)";
    return absl::StrCat(absl::StrJoin(match, ", "), " ", match.size() == 1 ? "matches" : "match",
                        " the witness: the defect is in the path ", rows[0].library,
                        " take", rows[0].library == "default libraries" ? "" : "s",
                        " for this op, not in ", absl::StrJoin(match, ", "), caveat);
  }
  if (!wrong.empty() && wrong.size() == static_cast<size_t>(run)) {
    return absl::StrCat("every library tried (", rows[0].library, ", ", absl::StrJoin(wrong, ", "),
                        ") is wrong the same way: the defect is not in one library's path");
  }
  return "mixed outcomes (see the table): inconclusive";
}

std::string RenderAblation(const Ablation& a) {
  if (a.rows.empty()) return "";
  std::string out = absl::StrCat(
      "## Which CUDA library\n\n", "The minimal program rerun with ", a.side,
      " under each switch that changes the kernel of ", a.op,
      " (`divfuzz help targets`; the repros take the same as `--backend=`):\n\n",
      "| target | library | outcome | detail |\n|---|---|---|---|\n");
  for (const AblationRow& r : a.rows) {
    std::string detail = absl::StrReplaceAll(r.detail, {{"|", "\\|"}, {"\n", " "}});
    absl::StrAppend(&out, "| `", r.target, "` | ", r.library, " | ", OutcomeText(r.outcome), " | ",
                    detail, " |\n");
  }
  absl::StrAppend(&out, "\n", a.conclusion.empty() ? "" : absl::StrCat("**", a.conclusion, ".**\n"));
  return out;
}

std::string AblationLine(const Ablation& a) {
  std::vector<std::string> parts;
  for (const AblationRow& r : a.rows) {
    parts.push_back(absl::StrCat(r.library, " (", r.target, "): ", OutcomeText(r.outcome)));
  }
  return absl::StrCat(absl::StrJoin(parts, "; "), a.conclusion.empty() ? "" : ": ", a.conclusion);
}

std::string AblationJson(const Ablation& a) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AblationRow& r : a.rows) {
    rows.push_back({{"target", r.target},
                    {"library", r.library},
                    {"outcome", std::string(OutcomeText(r.outcome))},
                    {"detail", r.detail}});
  }
  const nlohmann::json j = {{"op", a.op},
                            {"side", a.side},
                            {"rows", rows},
                            {"conclusion", a.conclusion},
                            {"summary", AblationLine(a)}};
  return j.dump(1) + "\n";
}

std::optional<Ablation> RunAblation(const graph::Program& program, const Evaluation& eval,
                                    const EvalOptions& options) {
  const oracles::Divergence& d = eval.root;
  if (d.node_index < 0) return std::nullopt;
  const std::optional<exec::Target> side = AblationSide(d, options.target_a, options.target_b);
  if (!side) return std::nullopt;
  const ops::OpSpec* spec = ops::FindOp(d.backward_of >= 0 ? d.forward_op : d.op);
  if (spec == nullptr || spec->cuda_kernels == 0) return std::nullopt;
  const bool side_a = side->Same(options.target_a);
  Ablation a;
  a.op = d.backward_of >= 0 ? d.forward_op : d.op;
  a.side = std::string(exec::TargetName(*side));
  a.rows.push_back({a.side, LibraryOf(*side), AblationRow::Outcome::kWrong,
                    absl::StrCat(oracles::ClassName(d.cls), ": ", d.value_a, " vs ", d.value_b)});
  for (exec::Target t : AblationTargets(*side, spec->cuda_kernels)) {
    AblationRow row{std::string(exec::TargetName(t)), LibraryOf(t), AblationRow::Outcome::kNotRun,
                    ""};
    EvalOptions o = options;
    (side_a ? o.target_a : o.target_b) = t;
    absl::StatusOr<Evaluation> e = Evaluate(program, o);
    const exec::RunResult* mine = nullptr;
    if (e.ok()) mine = side_a ? &e->a : &e->b;
    if (!e.ok()) {
      row.detail = FirstLine(std::string(e.status().message()));
    } else if (mine != nullptr && static_cast<size_t>(d.node_index) < mine->nodes.size() &&
               mine->nodes[d.node_index].error) {
      row.outcome = AblationRow::Outcome::kRaises;
      row.detail = FirstLine(mine->nodes[d.node_index].error->message);
    } else if (!e->found) {
      row.outcome = AblationRow::Outcome::kMatches;
      row.detail = absl::StrCat("agrees with ", side_a ? exec::TargetName(o.target_b)
                                                        : exec::TargetName(o.target_a));
    } else if (e->root.node_index == d.node_index &&
               (e->root.wrong_side == row.target || e->root.wrong_side == "both")) {
      row.outcome = AblationRow::Outcome::kWrong;
      row.detail = absl::StrCat(oracles::ClassName(e->root.cls), ": ", e->root.value_a, " vs ",
                                e->root.value_b);
    } else {
      row.outcome = AblationRow::Outcome::kOther;
      row.detail = oracles::Signature(e->root);
    }
    a.rows.push_back(std::move(row));
  }
  a.conclusion = AblationConclusion(a.rows);
  return a;
}

}  // namespace divfuzz::minimize
