#include "minimize/reducer.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "exec/malloc_perturb.h"
#include "graph/printer.h"
#include "graph/validate.h"
#include "minimize/emit_python.h"
#include "minimize/pass.h"
#include "minimize/program_edit.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/gradient.h"
#include "oracles/nan_rule.h"
#include "oracles/triage.h"

namespace divfuzz::minimize {
namespace {

// Nodes that raised because their arguments do not fit the schema, on either side.
int BadArgumentNodes(const Evaluation& e) {
  int n = 0;
  for (const exec::RunResult* r : {&e.a, &e.b}) {
    for (const exec::NodeResult& node : r->nodes) {
      if (node.error && node.error->kind == exec::NodeError::Kind::kBadArguments) ++n;
    }
  }
  return n;
}

using Clock = std::chrono::steady_clock;

exec::RunResult RunWith(const Runner& runner, const graph::Program& program,
                        const ops::TypeEnv& types, exec::Target target) {
  return runner ? runner(program, types, target) : exec::Run(program, types, target);
}

// "op|dtype|": what a racing write's signature keeps (see Evaluate).
std::string OpAndDType(const std::string& signature) {
  const size_t op_end = signature.find('|');
  const size_t dtype_end = op_end == std::string::npos ? op_end : signature.find('|', op_end + 1);
  return dtype_end == std::string::npos ? signature : signature.substr(0, dtype_end + 1);
}

// The root to keep: by signature (and tier), else the most severe one.
std::optional<oracles::Divergence> FindRoot(const oracles::Verdict& verdict,
                                            const std::string& signature, const std::string& tier,
                                            bool op_and_dtype_only) {
  const oracles::Divergence* best = nullptr;
  for (const oracles::Divergence* d : verdict.Roots()) {
    if (!signature.empty()) {
      if (op_and_dtype_only ? !absl::StartsWith(oracles::Signature(*d), OpAndDType(signature))
                            : oracles::Signature(*d) != signature) {
        continue;
      }
      if (!tier.empty() && d->tier != tier) continue;
      return *d;
    }
    if (best == nullptr || oracles::SeverityRank(*d) < oracles::SeverityRank(*best)) best = d;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

// Whether a node's value arguments include one of `values`.
bool UsesAny(const graph::Node& node, const std::set<std::string>& values) {
  for (const graph::Argument& arg : node.args) {
    if (arg.value.kind == graph::Literal::Kind::kValue && values.count(arg.value.s)) return true;
    for (const graph::Literal& item : arg.value.list) {
      if (item.kind == graph::Literal::Kind::kValue && values.count(item.s)) return true;
    }
  }
  return false;
}

// Whether `required_hits` (see Evaluate) is settled before the next of
// `left` runs: met, or out of reach.
bool Settled(int hits, int left, int required_hits) {
  return required_hits > 0 && (hits >= required_hits || hits + left < required_hits);
}

// `run()` announced to options.on_run: the program's text before, "" after.
template <typename Run>
auto Announced(const EvalOptions& options, const std::string& text, Run run) {
  if (options.on_run) options.on_run(text);
  auto result = run();
  if (options.on_run) options.on_run("");
  return result;
}

// Evaluate for a nondeterminism signature: the blamed target against itself.
absl::StatusOr<Evaluation> EvaluateNondeterminism(const graph::Program& program,
                                                  const EvalOptions& options,
                                                  const std::string& signature,
                                                  const std::string& tier, int required_hits) {
  const std::vector<std::string> parts = absl::StrSplit(signature, '|');
  const std::string& op = parts[0];
  const std::string& dtype = parts[1];
  const std::string& side = parts[3];
  const bool side_a = exec::TargetName(options.target_a) == side;
  const bool side_b = exec::TargetName(options.target_b) == side;
  const exec::Target target = side_a ? options.target_a : options.target_b;
  const Runner& runner = side_a ? options.runner_a : options.runner_b;
  if ((side_a || side_b) && target == exec::Target::kCuda && !runner && !exec::CudaAvailable()) {
    return absl::FailedPreconditionError("CUDA is not available in this process");
  }
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
  if (!types.ok()) return types.status();
  Evaluation e;
  e.types = std::move(*types);
  e.verdict.target_a = std::string(exec::TargetName(options.target_a));
  e.verdict.target_b = std::string(exec::TargetName(options.target_b));
  // A side that is neither target cannot be rerun here: nothing found.
  if (!side_a && !side_b) return e;
  // A nondeterminism root is a divergence, or expected for a kernel PyTorch
  // documents as nondeterministic (oracles::DocumentedNondeterminism).
  if (!tier.empty() && tier != "divergence" && tier != "expected") return e;
  auto matches = [&](const graph::Node& node) {
    if (node.QualifiedName() != op) return false;
    for (const std::string& r : node.results) {
      auto t = e.types.find(r);
      if (t != e.types.end() && graph::DTypeName(t->second.dtype) == dtype) return true;
    }
    return false;
  };
  const std::string text = options.on_run ? graph::PrintProgram(program) : "";
  // Run k under its own malloc perturb byte: a kernel that reads memory it
  // never wrote then differs between runs in any process (exec/malloc_perturb.h).
  auto run = [&](int k) {
    return Announced(options, text, [&] {
      exec::ScopedMallocPerturb perturb(exec::RerunPerturbByte(k));
      return RunWith(runner, program, e.types, target);
    });
  };
  e.a = run(1);
  for (int k = 2; k <= kNondeterminismReruns + 1; ++k) {
    if (Settled(e.hits, kNondeterminismReruns + 2 - k, required_hits)) break;
    exec::RunResult b = run(k);
    ++e.runs;
    if (!e.a.setup_error.empty() || !b.setup_error.empty()) {
      if (!e.found) e.b = std::move(b);
      continue;
    }
    // Values that differ between the two runs, to tell a node that differs
    // by itself from one that only inherits a difference.
    std::set<std::string> differing;
    std::optional<oracles::Divergence> hit;
    const size_t n = std::min({program.nodes.size(), e.a.nodes.size(), b.nodes.size()});
    for (size_t i = 0; i < n && !hit; ++i) {
      const graph::Node& node = program.nodes[i];
      std::optional<oracles::Divergence> d =
          oracles::RerunDifferenceOutsideNanRule(program, static_cast<int>(i), e.a, b);
      if (!d) continue;
      const bool inherited = UsesAny(node, differing);
      differing.insert(node.results.begin(), node.results.end());
      if (!matches(node)) continue;
      d->node_index = static_cast<int>(i);
      d->value = static_cast<size_t>(d->output_index) < node.results.size()
                     ? node.results[d->output_index]
                     : "";
      d->op = op;
      d->dtype = dtype;
      d->root = true;
      d->detail = absl::StrCat(side, " run 1 vs run ", k, ": ", d->detail);
      oracles::MarkNondeterminism(*d, program, static_cast<int>(i), target, options.policy,
                                  inherited ? " (its inputs already differ between the runs: the "
                                              "nondeterminism may start upstream)"
                                            : "");
      if (!tier.empty() && d->tier != tier) continue;
      hit = std::move(d);
    }
    if (!hit) {
      if (!e.found) e.b = std::move(b);
      continue;
    }
    ++e.hits;
    if (e.found) continue;
    e.root = *hit;
    e.verdict.divergences = {*hit};
    e.rerun = k;
    e.b = std::move(b);
    e.found = true;
  }
  e.found = e.hits >= std::max(1, required_hits);
  return e;
}

class Reducer : public ReductionContext {
 public:
  Reducer(const ReduceOptions& options, Evaluation start, graph::Program program)
      : options_(options),
        program_(std::move(program)),
        eval_(std::move(start)),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.max_seconds))) {
    signature_ = oracles::Signature(eval_.root);
    tier_ = options.keep_tier ? eval_.root.tier : "";
    // A race that showed on 4 runs of 4 must keep doing so.
    required_hits_ = std::max(1, eval_.hits);
    const std::string text = graph::PrintProgram(program_);
    seen_.insert(text);
    if (options_.on_keep) options_.on_keep(text, signature_, eval_.root.tier);
  }

  const graph::Program& program() const override { return program_; }
  const ops::TypeEnv& types() const override { return eval_.types; }
  const exec::RunResult& run_a() const override { return eval_.a; }
  const exec::RunResult& run_b() const override { return eval_.b; }
  const oracles::Divergence& root() const override { return eval_.root; }
  bool OutOfTime() const override { return Clock::now() >= deadline_; }

  bool Try(const graph::Program& candidate) override {
    if (OutOfTime()) {
      out_of_time_ = true;
      return false;
    }
    const auto [text, fresh] = seen_.insert(graph::PrintProgram(candidate));
    if (!fresh) return false;
    if (options_.skip.count(*text)) return false;
    ++tests_;
    ++current_->tests;
    if (!graph::ValidateProgram(candidate).ok()) return false;
    absl::StatusOr<Evaluation> e =
        options_.evaluate ? options_.evaluate(candidate)
                          : Evaluate(candidate, options_, signature_, tier_, required_hits_);
    if (!e.ok() || !e->found) return false;
    // A candidate whose arguments no longer fit a schema (a required scalar
    // dropped) raises on both sides, and a gradient statement over that
    // node's missing result still diverges: it would leave a program no
    // repro can run (run G's add.Scalar(%v) without `other`).
    if (BadArgumentNodes(*e) > BadArgumentNodes(eval_)) return false;
    program_ = candidate;
    eval_ = std::move(*e);
    ++current_->accepted;
    if (options_.on_keep) options_.on_keep(*text, signature_, eval_.root.tier);
    return true;
  }

  ReduceResult Run(const std::vector<PassInfo>& passes) {
    ReduceResult result;
    const auto start = Clock::now();
    result.nodes_before = static_cast<int>(program_.nodes.size());
    result.elements_before = InputElements(program_);
    result.bytes_before = graph::PrintProgram(program_).size();
    std::vector<PassStats> stats(passes.size());
    for (size_t i = 0; i < passes.size(); ++i) stats[i].name = passes[i].name;
    bool progress = true;
    while (progress && !OutOfTime()) {
      progress = false;
      ++result.rounds;
      for (size_t i = 0; i < passes.size() && !OutOfTime(); ++i) {
        current_ = &stats[i];
        const int accepted = stats[i].accepted, tests = stats[i].tests;
        const int nodes = static_cast<int>(program_.nodes.size());
        const int64_t elements = InputElements(program_);
        const size_t bytes = graph::PrintProgram(program_).size();
        const auto t0 = Clock::now();
        passes[i].run(*this);
        const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        stats[i].seconds += dt;
        ++stats[i].runs;
        if (stats[i].accepted > accepted) progress = true;
        if (options_.log != nullptr) {
          *options_.log << absl::StrFormat(
              "reduce: round %d %-10s nodes %d -> %d, elements %d -> %d, bytes %d -> %d "
              "(%d tests, %d kept, %.2f s)\n",
              result.rounds, passes[i].name, nodes, program_.nodes.size(), elements,
              InputElements(program_), bytes, graph::PrintProgram(program_).size(),
              stats[i].tests - tests, stats[i].accepted - accepted, dt);
        }
      }
    }
    result.out_of_time = out_of_time_ || (progress && OutOfTime());
    result.program = program_;
    result.signature = signature_;
    result.tier = eval_.root.tier;
    result.evaluation = eval_;
    result.nodes_after = static_cast<int>(program_.nodes.size());
    result.elements_after = InputElements(program_);
    result.bytes_after = graph::PrintProgram(program_).size();
    result.tests = tests_;
    result.skipped = static_cast<int>(options_.skip.size());
    result.passes = std::move(stats);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (options_.log != nullptr) {
      *options_.log << absl::StrFormat(
          "reduce: done: %s; nodes %d -> %d, elements %d -> %d, bytes %d -> %d, %d tests, "
          "%d rounds, %.2f s%s\n",
          signature_, result.nodes_before, result.nodes_after, result.elements_before,
          result.elements_after, result.bytes_before, result.bytes_after, result.tests,
          result.rounds, result.seconds, result.out_of_time ? " (budget spent)" : "");
    }
    return result;
  }

 private:
  const ReduceOptions& options_;
  graph::Program program_;
  Evaluation eval_;
  std::string signature_;
  std::string tier_;
  Clock::time_point deadline_;
  std::unordered_set<std::string> seen_;
  PassStats scratch_;
  PassStats* current_ = &scratch_;
  int tests_ = 0;
  int required_hits_ = 1;
  bool out_of_time_ = false;
};

}  // namespace

std::string NondeterministicSide(const std::string& signature) {
  const std::vector<std::string> parts = absl::StrSplit(signature, '|');
  if (parts.size() != 4 ||
      parts[2] != oracles::ClassName(oracles::DivergenceClass::kNondeterminism)) {
    return "";
  }
  return parts[3];
}

absl::StatusOr<Evaluation> Evaluate(const graph::Program& program, const EvalOptions& options,
                                    const std::string& signature, const std::string& tier,
                                    int required_hits) {
  if (!NondeterministicSide(signature).empty()) {
    return EvaluateNondeterminism(program, options, signature, tier, required_hits);
  }
  // Without a GPU the cuda target fails to build its inputs on every program:
  // that is no divergence to keep.
  for (const auto& [target, runner] : {std::pair{options.target_a, &options.runner_a},
                                       std::pair{options.target_b, &options.runner_b}}) {
    if (target == exec::Target::kCuda && !*runner && !exec::CudaAvailable()) {
      return absl::FailedPreconditionError("CUDA is not available in this process");
    }
  }
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
  if (!types.ok()) return types.status();
  Evaluation e;
  e.types = std::move(*types);
  // A divergence at a kernel whose writes race need not show on every run:
  // such a signature gets as many tries as a nondeterminism rerun.
  const bool racing = RacesAt(program, signature);
  const int attempts = racing ? 1 + kNondeterminismReruns : 1;
  // An expected divergence of such a kernel (which write lands is undefined)
  // has whatever class and wrong side the race gave that run: only its op,
  // dtype and tier identify it.
  const bool op_and_dtype_only = racing && tier == "expected";
  const std::string text = options.on_run ? graph::PrintProgram(program) : "";
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (Settled(e.hits, attempts - attempt, required_hits)) break;
    auto [a, b] = Announced(options, text, [&] {
      return std::pair{RunWith(options.runner_a, program, e.types, options.target_a),
                       RunWith(options.runner_b, program, e.types, options.target_b)};
    });
    ++e.runs;
    oracles::Verdict verdict = oracles::Compare(program, e.types, a, b, options.policy);
    if (!signature.empty()) {
      // Only roots whose op, dtype and class match can have the signature:
      // triage (float64 references, rules) just those.
      std::vector<oracles::Divergence> kept;
      for (oracles::Divergence& d : verdict.divergences) {
        if (!d.root) continue;
        // At a gradient statement triage names the backward kernel, with its
        // own dtype and class: only triage can tell.
        if (oracles::AtGradient(program, d)) {
          kept.push_back(std::move(d));
          continue;
        }
        oracles::Divergence probe = d;
        probe.wrong_side.clear();
        if (op_and_dtype_only ? absl::StartsWith(oracles::Signature(probe), OpAndDType(signature))
                              : absl::StartsWith(signature, oracles::Signature(probe))) {
          kept.push_back(std::move(d));
        }
      }
      verdict.divergences = std::move(kept);
    }
    oracles::Triage(program, e.types, a, b, options.policy, verdict);
    std::optional<oracles::Divergence> root = FindRoot(verdict, signature, tier, op_and_dtype_only);
    if (root) ++e.hits;
    // The evaluation shows the first run that had it (else the last run).
    if (e.found) continue;
    e.a = std::move(a);
    e.b = std::move(b);
    e.verdict = std::move(verdict);
    if (root) {
      e.root = *root;
      e.found = true;
    }
  }
  e.found = e.hits >= std::max(1, required_hits);
  return e;
}

absl::StatusOr<Evaluation> EvaluateStart(const graph::Program& program,
                                         const ReduceOptions& options) {
  absl::StatusOr<Evaluation> start =
      Evaluate(program, options, options.signature, options.tier, /*required_hits=*/0);
  // A bucket's tier may have changed since it was stored (another policy):
  // its signature alone still identifies it.
  if (start.ok() && !start->found && !options.tier.empty()) {
    start = Evaluate(program, options, options.signature, "", /*required_hits=*/0);
  }
  return start;
}

absl::StatusOr<ReduceResult> Reduce(const graph::Program& program, const ReduceOptions& options) {
  if (absl::Status s = graph::ValidateProgram(program); !s.ok()) return s;
  absl::StatusOr<Evaluation> start = EvaluateStart(program, options);
  if (!start.ok()) return start.status();
  return Reduce(program, options, std::move(*start));
}

absl::StatusOr<ReduceResult> Reduce(const graph::Program& program, const ReduceOptions& options,
                                    Evaluation start) {
  std::vector<PassInfo> passes;
  for (const PassInfo& p : Passes()) {
    bool wanted = options.passes.empty();
    for (const std::string& name : options.passes) wanted = wanted || name == p.name;
    if (wanted) passes.push_back(p);
  }
  for (const std::string& name : options.passes) {
    bool known = false;
    for (const PassInfo& p : Passes()) known = known || name == p.name;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("no reduction pass '", name, "'"));
  }
  if (absl::Status s = graph::ValidateProgram(program); !s.ok()) return s;
  if (!start.found && !NondeterministicSide(options.signature).empty()) {
    return absl::NotFoundError(absl::StrCat("the program shows no ", options.signature, " in ",
                                            kNondeterminismReruns, " reruns of ",
                                            NondeterministicSide(options.signature)));
  }
  if (!start.found) {
    return absl::NotFoundError(absl::StrCat(
        "the program shows no root divergence",
        options.signature.empty() ? "" : absl::StrCat(" with signature ", options.signature),
        " on ", exec::TargetName(options.target_a), " vs ", exec::TargetName(options.target_b)));
  }
  if (options.log != nullptr) {
    *options.log << "reduce: keeping " << oracles::Signature(start.root) << " (" << start.root.tier
                 << ") at node " << start.root.node_index << " on "
                 << exec::TargetName(options.target_a) << " vs "
                 << exec::TargetName(options.target_b) << ", budget " << options.max_seconds
                 << " s\n";
  }
  Reducer reducer(options, std::move(start), program);
  return reducer.Run(passes);
}

}  // namespace divfuzz::minimize
