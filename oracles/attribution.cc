#include "oracles/attribution.h"

#include <ATen/ops/view_as_real.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "exec/witnesses.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/invariants.h"
#include "oracles/nan_rule.h"

namespace divfuzz::oracles {
namespace {

using graph::DType;

int MantissaBits(DType d) {
  switch (d) {
    case DType::kF16:
      return 10;
    case DType::kBF16:
      return 7;
    case DType::kF64:
    case DType::kC128:
      return 52;
    default:
      return 23;
  }
}

// Element e of a tensor as a double (complex: the given component's part).
std::optional<double> ElementAt(const at::Tensor& t, long long e, int component) {
  if (!t.defined() || e < 0) return std::nullopt;
  const bool complex = at::isComplexType(t.scalar_type());
  at::Tensor d = complex ? at::view_as_real(t.contiguous()) : t;
  d = d.to(at::kDouble).contiguous().reshape({-1});
  const long long flat = complex ? 2 * e + std::max(component, 0) : e;
  if (flat >= d.numel()) return std::nullopt;
  return d.data_ptr<double>()[flat];
}

// The value at d's element of what the sides were compared by: the output
// itself, or the same invariant of a decomposition (so the reference shown
// beside the sides' invariant values is the reference's invariant, not its
// raw factor at that index).
std::optional<double> ComparedAt(const ops::OpSpec* spec, const std::vector<at::Tensor>& outputs,
                                 const Divergence& d) {
  if (d.invariant < 0) {
    if (static_cast<size_t>(d.output_index) >= outputs.size()) return std::nullopt;
    return ElementAt(outputs[d.output_index], d.element, d.component);
  }
  const std::vector<at::Tensor> inv = Comparable(spec, outputs);
  if (static_cast<size_t>(d.invariant) >= inv.size()) return std::nullopt;
  return ElementAt(inv[d.invariant], d.element, d.component);
}

DType RealDType(DType d) {
  if (d == DType::kC64) return DType::kF32;
  if (d == DType::kC128) return DType::kF64;
  return d;
}

// The flat real view of `t` at `mask` (DifferingElements).
at::Tensor AtMask(const at::Tensor& t, const at::Tensor& mask) {
  at::Tensor c = t.detach().cpu().contiguous();
  if (at::isComplexType(c.scalar_type())) c = at::view_as_real(c.resolve_conj());
  return c.contiguous().reshape({-1}).index({mask});
}

// Whether the float64 witnesses run the CPU's own algorithm for this node:
// float64 programs (nothing is upcast), integer inputs of an op that computes
// in integers (not upcast: exec::IntegerValuesUpcast says which are), and ops
// whose float64 kernel is the same library routine (kReferenceIsCpuKernel).
std::optional<std::string> SharesCpuAlgorithm(const ops::OpSpec* spec, DType dtype,
                                              const ops::TypeEnv& types, const graph::Node& node,
                                              const std::map<std::string, at::Tensor>& inputs) {
  if (dtype == DType::kF64 || dtype == DType::kC128) {
    return "the program is float64, so the float64 reference is the kernel under test";
  }
  if (spec != nullptr && (spec->hints & ops::kReferenceIsCpuKernel)) {
    return absl::StrCat(spec->Qualified(), "'s float64 reference runs the CPU's own library "
                                           "routine (MKL/pocketfft)");
  }
  // An op that promotes integer inputs to floating computes in floating:
  // those inputs are upcast like floating ones (sqrt, true division,
  // special_zeta of int32).
  const std::set<std::string> upcast = exec::IntegerValuesUpcast(node, types);
  bool floating = false, integral = false;
  for (const auto& [name, t] : inputs) {
    if (!t.defined()) continue;
    if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) floating = true;
    if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
      (upcast.count(name) > 0 ? floating : integral) = true;
    }
  }
  if (integral && !floating) {
    return "integer inputs of an op that computes in integers are not upcast, so the float64 "
           "reference is the CPU's integer kernel";
  }
  return std::nullopt;
}

struct SideCheck {
  bool is_reference = false;  // the cpu-f64 target, with no exact witness to judge it
  bool wrong = false;
  bool undecidable = false;    // no independent witness could judge this side
  bool reference_failed = false;
  bool scalar_rounding = false;  // wrong by the witness, right with scalars rounded
  bool rounding_free = false;
  bool class_miss = false;  // wrong by a finite/inf/NaN class against the witness
  bool counted = false;     // the witness counts (mode's rows): a miss is no rounding
  std::string witness = "none";
  std::string why;
  std::optional<double> ref_value;  // the deciding witness at the element
};

// Whether `judged` misses `reference` at the elements where the two sides
// (`side_a`, `side_b`) differ; everywhere when their shapes differ. `phase`:
// an oscillatory kernel's phase rounding is no miss (PhaseBoundOf).
std::optional<Divergence> Misses(const ops::OpSpec* spec, const graph::Node& node,
                                 const ops::TypeEnv& types, const Policy& policy,
                                 const std::vector<at::Tensor>& judged,
                                 const std::vector<at::Tensor>& side_a,
                                 const std::vector<at::Tensor>& side_b,
                                 const std::vector<at::Tensor>& reference,
                                 const std::optional<PhaseBound>& phase = std::nullopt,
                                 const at::Tensor& selected_from = at::Tensor()) {
  const std::vector<at::Tensor> mine = Comparable(spec, judged);
  const std::vector<at::Tensor> sa = Comparable(spec, side_a);
  const std::vector<at::Tensor> sb = Comparable(spec, side_b);
  const std::vector<at::Tensor> want = Comparable(spec, reference);
  const bool invariants = spec != nullptr && (spec->hints & ops::kDecomposition);
  for (size_t o = 0; o < mine.size() && o < want.size(); ++o) {
    // Indices are judged by the values they select from the side's own
    // input, not by the reference's choice among ties: session 45's CUDA
    // argsort put a -NaN first where every NaN sorts last, and both sides had
    // "matched" the float64 reference. Where they cannot be gathered, the
    // index-ties rule judges them.
    if (spec != nullptr && (spec->hints & ops::kIndicesOutput) &&
        mine[o].scalar_type() == at::kLong) {
      if (o != IndicesOutput(*spec) || !selected_from.defined() || !want[o].defined() ||
          mine[o].sizes() != want[o].sizes()) {
        continue;
      }
      const at::Tensor got = SelectedValues(*spec, node, selected_from, mine[o]);
      const at::Tensor ref = SelectedValues(*spec, node, selected_from, want[o]);
      if (!got.defined() || !ref.defined() || got.sizes() != ref.sizes()) continue;
      const std::optional<DType> xt = exec::FromScalarType(selected_from.scalar_type());
      if (!xt) continue;
      if (std::optional<Divergence> miss =
              CompareTensors(got, ref, *xt, policy.For(node.QualifiedName(), *xt))) {
        miss->detail = absl::StrCat("the indices select ", miss->detail);
        return miss;
      }
      continue;
    }
    if (!invariants && spec != nullptr && o < 32 && (spec->device_defined_outputs >> o) & 1u) {
      continue;
    }
    const auto dt = types.find(node.results[invariants ? 0 : std::min(o, node.results.size() - 1)]);
    const DType dtype = invariants
                            ? exec::FromScalarType(mine[o].scalar_type()).value_or(DType::kF32)
                        : dt == types.end() ? DType::kF32
                                            : dt->second.dtype;
    Tolerance tol = policy.For(node.QualifiedName(), dtype);
    at::Tensor mask;
    if (o < sa.size() && o < sb.size() && sa[o].defined() && sb[o].defined() &&
        mine[o].defined() && want[o].defined() && mine[o].sizes() == want[o].sizes() &&
        sa[o].sizes() == mine[o].sizes() && sb[o].sizes() == mine[o].sizes()) {
      mask = DifferingElements(sa[o], sb[o], dtype, tol);
    }
    std::optional<Divergence> miss;
    // An oscillatory kernel's own phase rounding (phase_rounding's bound)
    // is no miss: judged by the plain tolerance, CUDA's chebyshev_t on one
    // element was blamed beside the CPU's real NaN bug on another (H100).
    if (phase) {
      tol.rtol += 2 * phase->eps * phase->phase;
      tol.atol += 2 * phase->eps * phase->phase * phase->floor;
    }
    if (mask.defined()) {
      if (!mask.any().item<bool>()) continue;  // the sides agree on this output
      miss = CompareTensors(AtMask(mine[o], mask), AtMask(want[o], mask), RealDType(dtype), tol);
    } else {
      miss = CompareTensors(mine[o], want[o], dtype, tol);
    }
    if (miss) return miss;
  }
  return std::nullopt;
}

// What judging one side works from: its node result beside the other side's,
// and the witnesses computed from its own inputs (GatherWitnesses). Built in
// place and never copied: the witness pointers point into `witnesses`.
struct SideEvidence {
  const graph::Node& node;
  const ops::OpSpec* spec;  // null for an op the catalogue does not know
  const ops::TypeEnv& types;
  const Policy& policy;
  const Divergence& d;
  const exec::RunResult& run;
  const exec::NodeResult& got;     // this side's result at the node
  const exec::NodeResult& theirs;  // the other side's
  std::string side;                // this side's target name, for reasons
  std::map<std::string, at::Tensor> inputs;  // what this side fed the node
  DType dtype = DType::kF32;                 // the diverging output's dtype
  exec::WitnessPlan plan;  // the caller's, limited to the elements where the sides differ
  std::vector<exec::Witness> witnesses;
  const exec::Witness* exact = nullptr;  // none where it raises without rounding-free elimination
  const exec::Witness* f64 = nullptr;
  const exec::Witness* second = nullptr;   // a second float64 implementation (cuda-f64)
  const exec::Witness* rounded = nullptr;  // float64 with the number literals rounded to the dtype
};

// The side's own input 0 of the node, which an indices output selects from.
at::Tensor SelectedFrom(const SideEvidence& e) {
  if (e.node.args.empty() || e.node.args[0].value.kind != graph::Literal::Kind::kValue) return {};
  auto it = e.inputs.find(e.node.args[0].value.s);
  return it == e.inputs.end() ? at::Tensor() : it->second;
}

// Metadata needs no witness run: judged before any is computed. Shape and
// dtype are the op's documented metadata: what the meta kernel infers
// (ops::InferProgram), not what the CPU happens to return.
std::optional<SideCheck> JudgeMetadata(const SideEvidence& e) {
  const Divergence& d = e.d;
  if (d.cls != DivergenceClass::kMetaSplit || e.got.error ||
      static_cast<size_t>(d.output_index) >= e.got.outputs.size() ||
      static_cast<size_t>(d.output_index) >= e.node.results.size()) {
    return std::nullopt;
  }
  const at::Tensor& t = e.got.outputs[d.output_index];
  auto it = e.types.find(e.node.results[d.output_index]);
  if (it == e.types.end() || !t.defined()) return std::nullopt;
  SideCheck c;
  const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  const auto dt = exec::FromScalarType(t.scalar_type());
  c.witness = "meta";
  c.wrong = shape != it->second.shape || !dt || *dt != it->second.dtype;
  c.why = absl::StrCat(e.side, c.wrong ? " differs from" : " matches",
                       " the shape and dtype the meta kernel infers (",
                       graph::PrintType(it->second), ")");
  return c;
}

// mode's value needs no witness run either: it must be a most frequent
// value of its row under one way of counting NaNs (ModeValuesValid). A side
// whose value is none is wrong (session 49's judges: the CPU's -inf for a
// row whose 0 and 1 occur twice, the NaN policy aside; pytorch#46225).
std::optional<SideCheck> JudgeModeValue(const SideEvidence& e) {
  if (e.spec == nullptr || !(e.spec->hints & ops::kValueTies) || e.d.output_index != 0 ||
      e.d.cls == DivergenceClass::kMetaSplit || e.got.error || e.got.outputs.empty()) {
    return std::nullopt;
  }
  const std::vector<bool> valid =
      ModeValuesValid(*e.spec, e.node, SelectedFrom(e), e.got.outputs[0]);
  if (valid.empty()) return std::nullopt;
  const int64_t bad = std::count(valid.begin(), valid.end(), false);
  SideCheck c;
  c.witness = "mode-count";
  c.counted = true;
  c.wrong = bad > 0;
  c.why = c.wrong ? absl::StrCat(e.side, "'s value is no most frequent value of its row in ", bad,
                                 " row(s), however NaNs are counted (grouped, each on its own, "
                                 "or left out)")
                  : absl::StrCat(e.side, "'s value is a most frequent value of each row");
  return c;
}

// Computes the witnesses of the side's own inputs and picks out each kind.
// The exact witness is evaluated where the sides differ only (output 0 of an
// elementwise op; Misses judges those elements).
void GatherWitnesses(const graph::Program& program, const exec::WitnessPlan& plan,
                     SideEvidence& e) {
  e.inputs = NodeInputs(program, e.d.node_index, e.run);
  e.dtype = graph::ParseDType(e.d.dtype).value_or(DType::kF32);
  e.plan = plan;
  const exec::NodeResult& got = e.got;
  const exec::NodeResult& theirs = e.theirs;
  if (!got.error && !theirs.error && !got.outputs.empty() && !theirs.outputs.empty() &&
      got.outputs[0].defined() && theirs.outputs[0].defined() && !got.outputs[0].is_complex()) {
    e.plan.only = DifferingElements(got.outputs[0], theirs.outputs[0], e.dtype,
                                    e.policy.For(e.node.QualifiedName(), e.dtype));
  }
  e.witnesses = exec::NodeWitnesses(e.node, e.inputs, e.types, e.dtype, e.plan);
  for (exec::Witness& w : e.witnesses) {
    CorrectReference(e.node, e.inputs, &w.result.outputs);
    CorrectReference(e.node, e.inputs, &w.result.exact);
  }
  auto find = [&](exec::Witness::Kind kind) -> const exec::Witness* {
    for (const exec::Witness& w : e.witnesses) {
      if (w.kind == kind) return &w;
    }
    return nullptr;
  };
  e.exact = find(exec::Witness::Kind::kExact);
  // An exact witness that raises says so only for an exactly singular matrix
  // whose elimination is rounding-free (the kernels meet the zero pivot too).
  if (e.exact != nullptr && e.exact->result.error && !e.exact->rounding_free) e.exact = nullptr;
  e.f64 = find(exec::Witness::Kind::kF64);
  e.second = find(exec::Witness::Kind::kSecondF64);
  e.rounded = find(exec::Witness::Kind::kScalarsRounded);
}

// The witness's value at the diverging element.
std::optional<double> WitnessValue(const ops::OpSpec* spec, const exec::Witness* w,
                                   const Divergence& d) {
  if (w == nullptr || w->result.error) return std::nullopt;
  return ComparedAt(spec, w->result.exact.empty() ? w->result.outputs : w->result.exact, d);
}

// The reference target itself, with no exact witness: nothing independent
// can judge it; its own float64 value is the reference value shown.
SideCheck JudgeReferenceSide(const SideEvidence& e) {
  SideCheck c;
  c.is_reference = true;
  const Divergence& d = e.d;
  if (!e.got.error && static_cast<size_t>(d.output_index) < e.got.exact.size()) {
    std::vector<at::Tensor> exact = e.got.exact;
    CorrectReference(e.node, e.inputs, &exact);
    c.ref_value = ComparedAt(e.spec, exact, d);
  }
  return c;
}

// At a pole the float64 kernel runs the same reflection formula and returns
// its rounding residue (the exact witness knows the pole's value only where
// every differing element is one): whether a differing element sits on one.
bool DiffersOnAPole(const SideEvidence& e) {
  if (e.spec == nullptr || !(e.spec->hints & ops::kPolesAtNonPositiveIntegers) ||
      !e.plan.only.defined()) {
    return false;
  }
  const graph::Literal* self = ops::FindArg(e.node, 1, "self");
  auto it = self != nullptr && self->kind == graph::Literal::Kind::kValue ? e.inputs.find(self->s)
                                                                         : e.inputs.end();
  if (it == e.inputs.end() || !it->second.defined() ||
      it->second.numel() != e.plan.only.numel()) {
    return false;
  }
  const at::Tensor x = it->second.to(at::kDouble).reshape({-1});
  const at::Tensor pole = x.le(0).logical_and(x.eq(x.floor()));
  return pole.logical_and(e.plan.only.reshape({-1}).to(at::kBool)).any().item<bool>();
}

// Without the exact witness, float64 decides only where it is the same call
// and independent of both kernels: why not, or nullopt where it may judge.
// (Where the two float64 witnesses disagree, JudgeWithSplitWitnesses says
// which one judges this side.)
std::optional<std::string> WhyFloat64CannotJudge(const SideEvidence& e) {
  const exec::Witness* f64 = e.f64;
  if (std::optional<std::string> changed = exec::UpcastChangesCall(
          e.node, e.inputs, e.d.cls == DivergenceClass::kErrorSplit,
          f64 != nullptr && f64->result.error && !e.got.error
              ? std::optional<std::string>(f64->result.error->message)
              : std::nullopt)) {
    return absl::StrCat(*changed, ": the float64 reference is not the same call, so it cannot "
                        "judge ", e.side);
  }
  if (DiffersOnAPole(e)) {
    return absl::StrCat("some differing elements sit on a pole of ", e.node.QualifiedName(),
                        ", where the float64 reference returns the residue of the same "
                        "formula: it cannot judge ", e.side);
  }
  std::optional<std::string> shared;
  if (!DefinedByNanRule(e.node, e.inputs, e.plan.only)) {
    shared = SharesCpuAlgorithm(e.spec, e.dtype, e.types, e.node, e.inputs);
  }
  if (shared) {
    return absl::StrCat(*shared, ": it cannot judge ", e.side, " (no exact witness for ",
                        e.node.QualifiedName(), " here)");
  }
  if (e.second != nullptr && f64 != nullptr &&
      f64->result.error.has_value() != e.second->result.error.has_value()) {
    return absl::StrCat("the float64 witnesses disagree: ",
                        f64->result.error ? "cpu-f64" : e.second->name,
                        " raises and the other does not");
  }
  return std::nullopt;
}

// Where the two float64 witnesses, both computing values, disagree on the
// elements where the sides differ: how, or nullopt where they agree.
std::optional<std::string> Float64WitnessesDisagree(const SideEvidence& e) {
  const exec::Witness* f64 = e.f64;
  const exec::Witness* second = e.second;
  if (second == nullptr || f64 == nullptr) return std::nullopt;
  if (f64->result.error || second->result.error) return std::nullopt;
  // Only where it matters: the elements where the sides differ.
  if (std::optional<Divergence> split =
          Misses(e.spec, e.node, e.types, e.policy, second->result.outputs, e.got.outputs,
                 e.theirs.outputs, f64->result.outputs, std::nullopt, SelectedFrom(e))) {
    return absl::StrCat(second->name, " vs cpu-f64: ", split->detail);
  }
  return std::nullopt;
}

// Whose kernels a float64 witness runs, upcast: cpu-f64 the CPU's, cuda-f64
// CUDA's, cpu-scalar-f64 the scalar helper's. A witness that runs a side's
// own kernels may share that side's bug (CUDA embedding_renorm sums pow(x, p)
// without abs in float64 too), so it never vetoes an independent witness's
// verdict on that side.
bool RunsKernelsOf(const std::string& witness, exec::Target side) {
  if (witness == "cpu-f64") return side == exec::Target::kCpu || side == exec::Target::kCpuF64;
  if (witness == "cuda-f64") return side == exec::Target::kCuda || side == exec::Target::kCudaF64;
  if (witness == "cpu-scalar-f64") return side == exec::Target::kCpuScalar;
  return false;
}

// The side against the deciding witness (`judge`, named `judge_name` in
// reasons): which raised, whether it misses, or whether rounding the number
// literals to the dtype first explains the miss. `c` carries what is known.
SideCheck JudgeAgainst(const SideEvidence& e, const exec::Witness& judge,
                       const std::string& judge_name, SideCheck c) {
  const exec::NodeResult& got = e.got;
  if (judge.result.error) {
    c.reference_failed = true;
    // The reference raises on these inputs: a side that returns values
    // silently is the odd one out.
    c.wrong = !got.error;
    c.why = absl::StrCat("the ", judge_name, " raises (", judge.result.error->message, ")",
                         c.wrong ? absl::StrCat(" but ", e.side, " returns values") : "");
    return c;
  }
  if (got.error) {
    c.wrong = true;
    c.why = absl::StrCat(e.side, " raises (", got.error->message, ") where the ", judge_name,
                         " computes a value");
    return c;
  }
  std::optional<Divergence> miss =
      Misses(e.spec, e.node, e.types, e.policy, got.outputs, got.outputs, e.theirs.outputs,
             judge.result.outputs,
             e.spec != nullptr && graph::IsFloating(e.dtype)
                 ? PhaseBoundOf(*e.spec, e.node, e.inputs, e.dtype)
                 : std::nullopt,
             SelectedFrom(e));
  if (!miss) {
    c.why = absl::StrCat(e.side, " matches the ", judge_name, " computed from its own inputs");
    return c;
  }
  const exec::Witness* rounded = e.rounded;
  if (rounded != nullptr && !rounded->result.error &&
      !Misses(e.spec, e.node, e.types, e.policy, got.outputs, got.outputs, e.theirs.outputs,
              rounded->result.outputs, std::nullopt, SelectedFrom(e))) {
    c.scalar_rounding = true;
    c.why = absl::StrCat(e.side, " misses the ", judge_name,
                         " but matches it with the number literals rounded to ", e.d.dtype,
                         " first (", rounded->name, ")");
    return c;
  }
  c.wrong = true;
  c.class_miss = miss->cls == DivergenceClass::kClassSplit;
  c.why = absl::StrCat(e.side, " misses the ", judge_name, " computed from its own inputs: ",
                       miss->detail);
  return c;
}

// The two float64 witnesses disagree (`split` says how): the one that runs
// this side's own kernels never vetoes the one that does not. A CUDA side
// (cpu-scalar, against cpu-scalar-f64) is judged by cpu-f64 alone. The CPU
// side, whose kernels cpu-f64 runs, is wrong only where the second witness,
// independent of it, agrees that it misses: cpu-f64 accuses, the independent
// witness confirms or acquits. A second witness that runs neither side's
// kernels leaves float64 unable to decide. The reason names the witness that
// decided and why the other was set aside.
SideCheck JudgeWithSplitWitnesses(const SideEvidence& e, const std::string& split,
                                  exec::Target side, SideCheck c) {
  const exec::Witness& f64 = *e.f64;
  const exec::Witness& second = *e.second;
  const std::string disagree = absl::StrCat("the float64 witnesses disagree (", split, ")");
  if (RunsKernelsOf(second.name, side)) {
    c.witness = "cpu-f64";
    SideCheck j = JudgeAgainst(e, f64, "float64 reference (cpu-f64)", c);
    j.why = absl::StrCat(j.why, "; cpu-f64 decided: ", disagree, ", and ", second.name,
                         " was set aside because it runs ", e.side,
                         "'s own kernels, which may share the bug it is judged for");
    return j;
  }
  if (RunsKernelsOf("cpu-f64", side)) {
    SideCheck by_own = JudgeAgainst(e, f64, "float64 reference (cpu-f64)", c);
    if (!by_own.wrong) {
      by_own.why = absl::StrCat(by_own.why, " (", disagree, "; cpu-f64 accuses no side here, "
                                "and only its accusations are put to ", second.name,
                                ", the witness independent of ", e.side, ")");
      return by_own;
    }
    c.witness = second.name;
    c.ref_value = WitnessValue(e.spec, &second, e.d);
    SideCheck j = JudgeAgainst(e, second, absl::StrCat("float64 reference (", second.name, ")"), c);
    j.why = absl::StrCat(j.why, "; ", second.name, " decided: ", disagree, ", and cpu-f64, which "
                         "also finds ", e.side, " off, was set aside because it runs ", e.side,
                         "'s own kernels");
    return j;
  }
  c.undecidable = true;
  c.why = absl::StrCat(disagree, ", and neither runs ", e.side,
                       "'s kernels: float64 cannot decide");
  return c;
}

// Where the exact witness decided: why the float64 reference did not, when
// it could not judge this side or would have judged it otherwise ("" when
// it agrees or is absent). It runs a kernel's own algorithm, so it never
// vetoes the exact witness, which is independent of every kernel.
std::string Float64SetAside(const SideEvidence& e, const SideCheck& by_exact) {
  // The float64 target itself needs no word on its own reference.
  if (e.f64 == nullptr || e.run.target == exec::Target::kCpuF64) return "";
  if (std::optional<std::string> shared =
          SharesCpuAlgorithm(e.spec, e.dtype, e.types, e.node, e.inputs)) {
    if (!by_exact.wrong) return "";  // said where it blames: why float64 could not have
    return absl::StrCat("; cpu-f64 was set aside: ", *shared);
  }
  const SideCheck by_f64 = JudgeAgainst(e, *e.f64, "float64 reference", SideCheck{});
  if (by_f64.wrong == by_exact.wrong) return "";
  return absl::StrCat("; cpu-f64, which finds ", e.side, by_f64.wrong ? " wrong" : " right",
                      ", was set aside: it runs the CPU's own kernel, and the exact witness, "
                      "independent of every kernel, decides alone");
}

// Judges `run` at d's node: the metadata, else against the exact witness of
// its own inputs, else against float64 where float64 can judge it.
// A side that raises where its own kernel, given contiguous copies of the
// same inputs, computes the other side's values refuses a layout: PyTorch's
// ops take any strides, so the refusal is the bug, whatever the dtype (the
// CPU's max_pool3d on a 4-d channels_last input: sessions 44 and 45, judged
// real; a float64 program had no witness for it). nullopt: no input was
// strided, the contiguous run raises too, or its values are not the other
// side's.
std::optional<SideCheck> JudgeLayoutRefusal(const SideEvidence& e, exec::Target target) {
  if (e.d.cls != DivergenceClass::kErrorSplit || !e.got.error || e.theirs.error) {
    return std::nullopt;
  }
  // Only a refusal of the layout itself: views are documented to depend on
  // strides (view, view_as_complex, view.dtype), and an in-place op's
  // internal-overlap error on expanded inputs is documented too.
  const std::string& message = e.got.error->message;
  if (absl::StartsWith(e.node.op, "aten::view") ||
      (!absl::StrContains(message, "memory format") && !absl::StrContains(message, "contiguous"))) {
    return std::nullopt;
  }
  // The run's snapshots are contiguous; the layouts it held are in formats.
  bool strided = false;
  for (const auto& [name, t] : e.inputs) strided |= e.run.formats.count(name) > 0;
  if (!strided) return std::nullopt;
  const exec::NodeResult again = exec::RunNode(e.node, e.inputs, e.types, target);
  if (again.error || again.outputs.size() != e.theirs.outputs.size()) return std::nullopt;
  for (size_t o = 0; o < again.outputs.size(); ++o) {
    const at::Tensor& mine = again.outputs[o];
    const at::Tensor& theirs = e.theirs.outputs[o];
    if (mine.defined() != theirs.defined()) return std::nullopt;
    if (!mine.defined()) continue;
    const std::optional<DType> dt = exec::FromScalarType(mine.scalar_type());
    if (!dt || mine.sizes() != theirs.sizes() ||
        CompareTensors(mine, theirs.to(mine.device()), *dt, e.policy.For(e.node.QualifiedName(), *dt))) {
      return std::nullopt;
    }
  }
  SideCheck c;
  c.wrong = true;
  c.witness = "contiguous";
  c.why = absl::StrCat(e.side, " raises (", e.got.error->message,
                       ") for its inputs' layout, and computes the other side's values from "
                       "contiguous copies of them: a kernel must take any strides");
  return c;
}

// The raising side of an error split that refuses its inputs' layout, and
// its verdict (JudgeLayoutRefusal); nullopt for other divergences.
struct Refusal {
  exec::Target raiser;
  SideCheck check;
};

// What `run` (against `other`) shows at the divergence's node.
SideEvidence EvidenceOf(const graph::Program& program, const ops::TypeEnv& types,
                        const Policy& policy, const Divergence& d, const exec::RunResult& run,
                        const exec::RunResult& other) {
  const graph::Node& node = program.nodes[d.node_index];
  return SideEvidence{node,
                      ops::FindOp(node.QualifiedName()),
                      types,
                      policy,
                      d,
                      run,
                      run.nodes[d.node_index],
                      other.nodes[d.node_index],
                      std::string(exec::TargetName(run.target))};
}

std::optional<Refusal> FindLayoutRefusal(const graph::Program& program, const ops::TypeEnv& types,
                                         const exec::RunResult& a, const exec::RunResult& b,
                                         const Policy& policy, const Divergence& d) {
  if (d.cls != DivergenceClass::kErrorSplit) return std::nullopt;
  const graph::Node& node = program.nodes[d.node_index];
  const bool a_raised = a.nodes[d.node_index].error.has_value();
  const exec::RunResult& run = a_raised ? a : b;
  const exec::RunResult& other = a_raised ? b : a;
  SideEvidence e = EvidenceOf(program, types, policy, d, run, other);
  e.inputs = NodeInputs(program, d.node_index, run);
  std::optional<SideCheck> check = JudgeLayoutRefusal(e, run.target);
  if (!check) return std::nullopt;
  return Refusal{run.target, *check};
}

SideCheck CheckSide(const graph::Program& program, const ops::TypeEnv& types,
                    const exec::RunResult& run, const exec::RunResult& other,
                    const Policy& policy, const exec::WitnessPlan& plan, const Divergence& d,
                    const std::optional<Refusal>& refusal) {
  const graph::Node& node = program.nodes[d.node_index];
  SideEvidence e = EvidenceOf(program, types, policy, d, run, other);
  if (std::optional<SideCheck> meta = JudgeMetadata(e)) return *meta;
  if (e.spec != nullptr && (e.spec->hints & ops::kValueTies)) {
    e.inputs = NodeInputs(program, d.node_index, run);
    if (std::optional<SideCheck> mode = JudgeModeValue(e)) return *mode;
  }
  // An error split where the raising side refuses its inputs' layout: that
  // side is wrong, and the other matches the raising kernel's own
  // contiguous run (found once for both sides: FindLayoutRefusal).
  if (refusal) {
    if (refusal->raiser == run.target) return refusal->check;
    SideCheck c;
    c.witness = refusal->check.witness;
    c.why = absl::StrCat(e.side, " computes what ", exec::TargetName(refusal->raiser),
                         "'s kernel computes from contiguous copies of its inputs");
    return c;
  }
  GatherWitnesses(program, plan, e);
  if (e.exact == nullptr && run.target == exec::Target::kCpuF64) return JudgeReferenceSide(e);

  SideCheck c;
  const exec::Witness* judge = e.exact != nullptr ? e.exact : e.f64;
  c.witness = e.exact != nullptr ? "exact" : "cpu-f64";
  c.ref_value = WitnessValue(e.spec, judge, d);
  if (e.exact != nullptr) c.rounding_free = e.exact->rounding_free;
  if (e.exact == nullptr) {
    if (std::optional<std::string> why = WhyFloat64CannotJudge(e)) {
      c.undecidable = true;
      c.why = *why;
      return c;
    }
    if (std::optional<std::string> split = Float64WitnessesDisagree(e)) {
      return JudgeWithSplitWitnesses(e, *split, run.target, c);
    }
    if (e.second != nullptr && e.f64 != nullptr && !e.f64->result.error &&
        !e.second->result.error) {
      c.witness = absl::StrCat("cpu-f64+", e.second->name);
    }
  }
  const std::string method =
      e.exact != nullptr && e.spec != nullptr ? exec::ExactMethod(e.spec->exact) : "";
  const std::string judge_name =
      e.exact != nullptr
          ? absl::StrCat("exact witness (", method.empty() ? "MPFR / exact rationals" : method, ")")
      : c.witness == "cpu-f64" ? "float64 reference"
                               : absl::StrCat("float64 reference (", c.witness, " agree)");
  SideCheck j = JudgeAgainst(e, *judge, judge_name, c);
  if (e.exact != nullptr) j.why += Float64SetAside(e, j);
  return j;
}

std::string SideLabel(exec::Target t) { return std::string(exec::TargetName(t)); }

// Whether node `node` read different values on the two sides (compared in
// float64, so a float64 side's extra digits count; NaNs equal).
bool InputsDiffer(const graph::Program& program, int node, const exec::RunResult& a,
                  const exec::RunResult& b) {
  const std::map<std::string, at::Tensor> ia = NodeInputs(program, node, a);
  const std::map<std::string, at::Tensor> ib = NodeInputs(program, node, b);
  const auto wide = [](const at::Tensor& t) {
    return t.to(t.is_complex() ? at::kComplexDouble : at::kDouble);
  };
  for (const auto& [name, raw] : ia) {
    auto it = ib.find(name);
    if (it == ib.end() || !raw.defined() || !it->second.defined() ||
        raw.is_complex() != it->second.is_complex()) {
      continue;
    }
    const at::Tensor ta = wide(raw), tb = wide(it->second);
    if (ta.sizes() != tb.sizes() || !ta.isnan().equal(tb.isnan())) return true;
    const at::Tensor both = ta.isnan().logical_not();
    if (!ta.masked_select(both).equal(tb.masked_select(both))) return true;
  }
  return false;
}

}  // namespace

double Ulp(DType dtype, double x) {
  const int p = MantissaBits(dtype);
  const double denorm = graph::DenormMin(dtype);
  if (!std::isfinite(x)) return std::numeric_limits<double>::infinity();
  if (x == 0) return denorm;
  const double spacing = std::ldexp(1.0, std::ilogb(x) - p);
  return std::max(spacing, denorm);
}

void ErrorAgainst(double value, double ref, DType dtype, double* ulp, double* rel) {
  if (!std::isfinite(value) || !std::isfinite(ref)) return;
  *ulp = std::fabs(value - ref) / Ulp(dtype, ref);
  *rel = ref == 0 ? (value == 0 ? 0 : std::numeric_limits<double>::infinity())
                  : std::fabs(value - ref) / std::fabs(ref);
}

std::map<std::string, at::Tensor> NodeInputs(const graph::Program& program, int node,
                                             const exec::RunResult& run) {
  std::map<std::string, std::pair<int, int>> producer;
  for (int i = 0; i < node; ++i) {
    for (size_t j = 0; j < program.nodes[i].results.size(); ++j) {
      producer[program.nodes[i].results[j]] = {i, static_cast<int>(j)};
    }
  }
  std::map<std::string, at::Tensor> values;
  std::function<void(const graph::Literal&)> visit = [&](const graph::Literal& l) {
    if (l.kind == graph::Literal::Kind::kValue) {
      if (auto it = run.inputs.find(l.s); it != run.inputs.end()) {
        values[l.s] = it->second;
      } else if (auto p = producer.find(l.s); p != producer.end()) {
        const exec::NodeResult& r = run.nodes[p->second.first];
        const std::vector<at::Tensor>& src = r.exact.empty() ? r.outputs : r.exact;
        if (static_cast<size_t>(p->second.second) < src.size()) {
          values[l.s] = src[p->second.second];
        }
      }
    }
    for (const graph::Literal& item : l.list) visit(item);
  };
  for (const graph::Argument& a : program.nodes[node].args) visit(a.value);
  return values;
}

// A grid_sampler root's node inputs from one side's run, and the grid
// coordinates of the sample its divergence names (`here`). nullopt where the
// root is not a grid op's tolerance or class split at an element.
struct GridSampleAt {
  const graph::Node* node = nullptr;
  const ops::OpSpec* spec = nullptr;
  std::map<std::string, at::Tensor> inputs;
  std::string grid_name;
  at::Tensor grid, here;  // float64
};
std::optional<GridSampleAt> DivergingGridSample(const graph::Program& program,
                                                const exec::RunResult& run, const Divergence& d) {
  GridSampleAt s;
  s.node = &program.nodes[d.node_index];
  const graph::Node& node = *s.node;
  s.spec = ops::FindOp(node.QualifiedName());
  if (s.spec == nullptr || s.spec->grid.arg < 0 || d.element < 0 ||
      (d.cls != DivergenceClass::kTolerance && d.cls != DivergenceClass::kClassSplit) ||
      node.args.size() <= static_cast<size_t>(s.spec->grid.arg) ||
      node.args[0].value.kind != graph::Literal::Kind::kValue ||
      node.args[s.spec->grid.arg].value.kind != graph::Literal::Kind::kValue) {
    return std::nullopt;
  }
  s.inputs = NodeInputs(program, d.node_index, run);
  s.grid_name = node.args[s.spec->grid.arg].value.s;
  auto input = s.inputs.find(node.args[0].value.s);
  auto grid = s.inputs.find(s.grid_name);
  if (input == s.inputs.end() || grid == s.inputs.end() || !grid->second.is_floating_point() ||
      !input->second.is_floating_point() || input->second.dim() < 3 ||
      grid->second.dim() != input->second.dim()) {
    return std::nullopt;
  }
  s.grid = grid->second.to(at::kDouble);
  const int64_t k = s.grid.size(-1), batch = s.grid.size(0);
  const int64_t samples = s.grid.numel() / std::max<int64_t>(1, k * batch);
  const int64_t channels = input->second.size(1);
  if (samples == 0 || d.element >= batch * channels * samples) return std::nullopt;
  s.here = s.grid.reshape({batch, samples, k})[d.element / (channels * samples)]
                                               [d.element % samples];
  return s;
}

// grid_sampler's documented meaning of a non-finite coordinate
// (torch.nn.functional.grid_sample: "NaN values in grid would be interpreted
// as -1"; "zeros: use 0 for out-of-bound grid locations", "border: use border
// values for out-of-bound grid locations"). Where the diverging sample's
// coordinates hold a NaN, or an infinity under zeros or border padding, the
// side's own inputs with NaN read as -1 and +-inf as +-4 (out of bounds the
// same way) give the documented sample, computed by the float64 CPU kernel
// from finite coordinates: the witness for session 46's CPU bugs at such
// coordinates (its 3-d clip sending NaN to the far border, its NaN for an
// infinite coordinate under zeros padding), where the float64 references ran
// the same coordinate code. nullopt where none applies.
std::optional<std::vector<at::Tensor>> DocumentedGridSample(const graph::Program& program,
                                                            const ops::TypeEnv& types,
                                                            const exec::RunResult& run,
                                                            const Divergence& d) {
  std::optional<GridSampleAt> at_sample = DivergingGridSample(program, run, d);
  if (!at_sample) return std::nullopt;
  const graph::Node& node = *at_sample->node;
  const graph::Literal* pad = ops::FindArg(
      node, static_cast<size_t>(at_sample->spec->grid.padding_arg), "padding_mode");
  const int64_t padding = pad != nullptr && pad->kind == graph::Literal::Kind::kInt ? pad->i : -1;
  const at::Tensor& g = at_sample->grid;
  const at::Tensor& here = at_sample->here;
  const bool nan = here.isnan().any().item<bool>();
  const bool inf = here.isinf().any().item<bool>();
  if (!nan && !inf) return std::nullopt;
  if (inf && padding != 0 && padding != 1) return std::nullopt;  // reflection: no position
  at::Tensor documented = at::where(g.isnan(), at::full_like(g, -1.0), g);
  documented = at::where(documented.isinf(), documented.sign().mul(4.0), documented);
  std::map<std::string, at::Tensor>& inputs = at_sample->inputs;
  inputs[at_sample->grid_name] = documented;  // -1 and +-4 are exact in every dtype
  exec::NodeResult r = exec::RunNode(node, inputs, types, exec::Target::kCpuF64);
  if (r.error || r.outputs.empty()) return std::nullopt;
  return r.outputs;  // rounded to the program's dtype, as the sides' are
}

// grid_sampler in f16/bf16 at a finite diverging sample that both sides miss
// the float64 sample by: the exact coordinate may lie a hair from a cell's
// edge (session 47's 300e4953: 1e-8 off, beyond any float coordinate), so
// the float64 kernel picks a cell no half kernel can. A correct half kernel
// forms its coordinates in opmath (CUDA's since pytorch#90427: "the
// computations are done in opmath_t"), so the witness is the CPU's float32
// kernel on the side's own inputs, rounded to the dtype: it convicts the
// CPU's half kernel, which rounds the coordinate in the dtype (judged real in
// sessions 46 and 47). nullopt where none applies.
std::optional<std::vector<at::Tensor>> OpmathGridSample(const graph::Program& program,
                                                        const ops::TypeEnv& types,
                                                        const exec::RunResult& run,
                                                        const Divergence& d) {
  const std::optional<DType> dtype = graph::ParseDType(d.dtype);
  if (!dtype || (*dtype != DType::kF16 && *dtype != DType::kBF16)) return std::nullopt;
  std::optional<GridSampleAt> at_sample = DivergingGridSample(program, run, d);
  if (!at_sample) return std::nullopt;
  const graph::Node& node = *at_sample->node;
  const at::Tensor& here = at_sample->here;
  std::map<std::string, at::Tensor>& inputs = at_sample->inputs;
  if (!at::isfinite(here).all().item<bool>()) return std::nullopt;  // DocumentedGridSample's
  for (auto& [name, t] : inputs) {
    if (t.defined() && t.is_floating_point()) t = t.cpu().to(at::kFloat);
  }
  exec::NodeResult r = exec::RunNode(node, inputs, types, exec::Target::kCpu);
  if (r.error || r.outputs.empty()) return std::nullopt;
  for (at::Tensor& t : r.outputs) {
    if (t.defined() && t.is_floating_point()) {
      t = exec::ToDTypeKeepingNaNs(t, exec::ToScalarType(*dtype));
    }
  }
  return r.outputs;
}

void Attribute(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
               const exec::RunResult& b, const Policy& policy, Divergence& d,
               const exec::WitnessPlan* plan_override) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size() ||
      static_cast<size_t>(d.node_index) >= a.nodes.size() ||
      static_cast<size_t>(d.node_index) >= b.nodes.size()) {
    return;
  }
  const exec::WitnessPlan plan =
      plan_override != nullptr ? *plan_override : exec::PlanFor(a.target, b.target);
  const std::optional<Refusal> refusal = FindLayoutRefusal(program, types, a, b, policy, d);
  SideCheck ca = CheckSide(program, types, a, b, policy, plan, d, refusal);
  SideCheck cb = CheckSide(program, types, b, a, policy, plan, d, refusal);
  // One side against a sample `witness` computed from its own inputs.
  auto against = [&](const exec::RunResult& run, const std::vector<at::Tensor>& sample,
                     const char* witness, const std::string& what) {
    const graph::Node& node = program.nodes[d.node_index];
    const std::optional<Divergence> miss =
        Misses(ops::FindOp(node.QualifiedName()), node, types, policy,
               run.nodes[d.node_index].outputs, a.nodes[d.node_index].outputs,
               b.nodes[d.node_index].outputs, sample);
    SideCheck c;
    c.witness = witness;
    c.wrong = miss.has_value();
    c.class_miss = miss && miss->cls == DivergenceClass::kClassSplit;
    c.why = absl::StrCat(exec::TargetName(run.target), c.wrong ? " misses" : " matches", what,
                         miss ? absl::StrCat(": ", miss->detail) : "");
    return c;
  };
  // A non-finite grid coordinate: each side against the documented sample
  // from its own inputs, where the witnesses above ran its coordinate code.
  for (auto [run, check] : {std::pair<const exec::RunResult*, SideCheck*>{&a, &ca},
                            std::pair<const exec::RunResult*, SideCheck*>{&b, &cb}}) {
    if (const std::optional<std::vector<at::Tensor>> documented =
            DocumentedGridSample(program, types, *run, d)) {
      *check = against(*run, *documented, "documented",
                       " the documented sample from its own inputs (grid_sample: NaN read as "
                       "-1, an out-of-bound location per padding_mode), computed by the "
                       "float64 kernel from finite coordinates");
    }
  }
  // Both sides off the float64 sample at a finite coordinate of a half
  // grid_sampler: each against the opmath sample, where it tells them apart.
  if (ca.wrong && cb.wrong && ca.witness != "documented") {
    const std::optional<std::vector<at::Tensor>> oa = OpmathGridSample(program, types, a, d);
    const std::optional<std::vector<at::Tensor>> ob =
        oa ? OpmathGridSample(program, types, b, d) : std::nullopt;
    if (oa && ob) {
      const std::string what = absl::StrCat(
          " the sample with coordinates formed in float32 from its own inputs (the CPU's "
          "float32 kernel, rounded to ", d.dtype, "), where both sides miss the float64 sample");
      const SideCheck sa = against(a, *oa, "opmath", what), sb = against(b, *ob, "opmath", what);
      if (sa.wrong != sb.wrong) ca = sa, cb = sb;
    }
  }
  if (ca.ref_value) d.reference_a = graph::FormatFloat(*ca.ref_value);
  if (cb.ref_value) d.reference_b = graph::FormatFloat(*cb.ref_value);
  d.rounding_free = ca.rounding_free || cb.rounding_free;
  const std::optional<DType> dtype = graph::ParseDType(d.dtype);
  auto errors = [&](const std::string& shown, const std::optional<double>& ref, double* ulp,
                    double* rel) {
    char* end = nullptr;
    const double v = std::strtod(shown.c_str(), &end);
    if (!ref || !dtype || end == shown.c_str()) return;
    ErrorAgainst(v, *ref, RealDType(*dtype), ulp, rel);
  };
  errors(d.value_a, ca.ref_value, &d.ulp_a, &d.rel_a);
  errors(d.value_b, cb.ref_value, &d.ulp_b, &d.rel_b);

  const bool tolerance = d.cls == DivergenceClass::kTolerance;
  const std::string reasons = absl::StrCat(ca.is_reference ? "the first side is the reference" : ca.why,
                                           "; ", cb.is_reference ? "the other side is the reference" : cb.why);
  if (ca.undecidable || cb.undecidable) {
    d.wrong_side = "undecided";
    d.witness = "none";
    d.reason = absl::StrCat("no witness can decide: ", ca.undecidable ? ca.why : cb.why);
    return;
  }
  // The witness that decided: the blamed side's where one side is blamed.
  d.witness = ca.is_reference || (cb.wrong && !ca.wrong) ? cb.witness : ca.witness;
  if (ca.scalar_rounding || cb.scalar_rounding) d.scalar_rounding = true;
  if (ca.wrong && cb.wrong) {
    // Both beyond tolerance of their references: only a split blames both
    // (also two finite values against an infinite witness: a pole), or a
    // count that neither value meets (session 51's c7aa9723: mode's CPU 1.0
    // and CUDA 0.5 in a row whose ten zeros outnumber all else).
    d.wrong_side = tolerance && !(ca.class_miss && cb.class_miss) && !(ca.counted && cb.counted)
                       ? "undecided"
                       : "both";
    d.reason = reasons;
  } else if (ca.wrong || cb.wrong) {
    d.wrong_side = SideLabel(ca.wrong ? a.target : b.target);
    d.reason = ca.wrong ? reasons
                        : absl::StrCat(cb.why, "; ", ca.is_reference ? "the other side is the reference" : ca.why);
  } else {
    d.wrong_side = "undecided";
    // Inherited only where the inputs really differ: with the same inputs,
    // both "matching" means the witness does not compare that output (an
    // index among ties).
    d.inherited = !d.scalar_rounding && InputsDiffer(program, d.node_index, a, b);
    d.reason = d.scalar_rounding
                   ? reasons
                   : absl::StrCat("both sides match witnesses computed from their own inputs: the "
                                  "divergence comes from differences they inherited",
                                  ca.is_reference || cb.is_reference ? "" : absl::StrCat(" (", reasons, ")"));
  }
}

}  // namespace divfuzz::oracles

