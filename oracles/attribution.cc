#include "oracles/attribution.h"

#include <ATen/ops/view_as_real.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "oracles/compare.h"
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

// Element e of a tensor as a double (complex: its real part pairs are flat).
std::optional<double> ElementAt(const at::Tensor& t, long long e) {
  if (!t.defined() || e < 0) return std::nullopt;
  at::Tensor d = at::isComplexType(t.scalar_type()) ? at::view_as_real(t.contiguous()) : t;
  d = d.to(at::kDouble).contiguous().reshape({-1});
  if (e >= d.numel()) return std::nullopt;
  return d.data_ptr<double>()[e];
}

struct SideCheck {
  bool is_reference = false;  // the cpu-f64 target is the reference itself
  bool wrong = false;
  bool reference_failed = false;
  bool used_witness = false;  // judged against the cpu-scalar witness
  std::string why;
  std::optional<double> ref_value;  // float64 reference at the element
};

SideCheck CheckSide(const graph::Program& program, const ops::TypeEnv& types,
                    const exec::RunResult& run, const Policy& policy, const Divergence& d) {
  SideCheck c;
  const graph::Node& node = program.nodes[d.node_index];
  const std::string side(exec::TargetName(run.target));
  if (run.target == exec::Target::kCpuF64) {
    c.is_reference = true;
    const exec::NodeResult& own = run.nodes[d.node_index];
    if (!own.error && static_cast<size_t>(d.output_index) < own.exact.size()) {
      std::vector<at::Tensor> exact = own.exact;
      CorrectReference(node, NodeInputs(program, d.node_index, run), &exact);
      c.ref_value = ElementAt(exact[d.output_index], d.element);
    }
    return c;
  }
  const std::map<std::string, at::Tensor> inputs = NodeInputs(program, d.node_index, run);
  exec::NodeResult ref = exec::RunNode(node, inputs, types, exec::Target::kCpuF64);
  // In float64 the reference is the same vectorized CPU kernel as the cpu
  // target, so it cannot judge it: ATen's scalar kernels are a second witness.
  if (d.dtype == "f64" && run.target != exec::Target::kCpuScalar && !ref.error) {
    const exec::NodeResult witness = exec::RunNode(node, inputs, types, exec::Target::kCpuScalar);
    if (!witness.error && witness.outputs.size() == ref.outputs.size()) {
      bool differ = false;
      for (size_t o = 0; o < ref.outputs.size() && !differ; ++o) {
        differ = CompareTensors(ref.outputs[o], witness.outputs[o], graph::DType::kF64,
                                policy.For(node.QualifiedName(), graph::DType::kF64))
                     .has_value();
      }
      if (differ) {
        ref = witness;
        ref.exact = witness.outputs;
        c.used_witness = true;
      }
    }
  }
  CorrectReference(node, inputs, &ref.outputs);
  CorrectReference(node, inputs, &ref.exact);
  const exec::NodeResult& got = run.nodes[d.node_index];
  if (ref.error) {
    c.reference_failed = true;
    // The reference raises on these inputs: a side that returns values
    // silently is the odd one out.
    c.wrong = !got.error;
    c.why = absl::StrCat("the float64 reference raises (", ref.error->message, ")",
                         c.wrong ? absl::StrCat(" but ", side, " returns values") : "");
    return c;
  }
  if (static_cast<size_t>(d.output_index) < ref.exact.size()) {
    c.ref_value = ElementAt(ref.exact[d.output_index], d.element);
  }
  if (got.error) {
    c.wrong = true;
    c.why = absl::StrCat(side, " raises (", got.error->message,
                         ") where the float64 reference computes a value");
    return c;
  }
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  const std::vector<at::Tensor> mine = Comparable(spec, got.outputs);
  const std::vector<at::Tensor> want = Comparable(spec, ref.outputs);
  const bool invariants = spec != nullptr && (spec->hints & ops::kDecomposition);
  for (size_t o = 0; o < mine.size() && o < want.size(); ++o) {
    // Indices are judged by the index-ties rule, not against the reference's choice.
    if (spec != nullptr && (spec->hints & ops::kIndicesOutput) &&
        mine[o].scalar_type() == at::kLong) {
      continue;
    }
    const auto dt = types.find(node.results[invariants ? 0 : o]);
    const DType dtype = invariants
                            ? exec::FromScalarType(mine[o].scalar_type()).value_or(DType::kF32)
                        : dt == types.end() ? DType::kF32
                                            : dt->second.dtype;
    std::optional<Divergence> miss =
        CompareTensors(mine[o], want[o], dtype, policy.For(node.QualifiedName(), dtype));
    if (miss) {
      c.wrong = true;
      c.why = absl::StrCat(side, " misses the ",
                           c.used_witness
                               ? "cpu-scalar witness (the vectorized float64 kernel disagrees with "
                                 "ATen's scalar kernel here)"
                               : "float64 reference",
                           " computed from its own inputs: ", miss->detail);
      return c;
    }
  }
  c.why = absl::StrCat(side, " matches the float64 reference computed from its own inputs");
  return c;
}

std::string SideLabel(exec::Target t) { return std::string(exec::TargetName(t)); }

}  // namespace

double Ulp(DType dtype, double x) {
  const int p = MantissaBits(dtype);
  const double denorm = graph::DenormMin(dtype);
  if (!std::isfinite(x)) return std::numeric_limits<double>::infinity();
  if (x == 0) return denorm;
  const double spacing = std::ldexp(1.0, std::ilogb(x) - p);
  return std::max(spacing, denorm);
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

void Attribute(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
               const exec::RunResult& b, const Policy& policy, Divergence& d) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size() ||
      static_cast<size_t>(d.node_index) >= a.nodes.size() ||
      static_cast<size_t>(d.node_index) >= b.nodes.size()) {
    return;
  }
  const SideCheck ca = CheckSide(program, types, a, policy, d);
  const SideCheck cb = CheckSide(program, types, b, policy, d);
  if (ca.ref_value) d.reference_a = graph::FormatFloat(*ca.ref_value);
  if (cb.ref_value) d.reference_b = graph::FormatFloat(*cb.ref_value);
  const std::optional<DType> dtype = graph::ParseDType(d.dtype);
  auto errors = [&](const std::string& shown, const std::optional<double>& ref, double* ulp,
                    double* rel) {
    char* end = nullptr;
    const double v = std::strtod(shown.c_str(), &end);
    if (!ref || !dtype || end == shown.c_str() || !std::isfinite(v) || !std::isfinite(*ref)) {
      return;
    }
    *ulp = std::fabs(v - *ref) / Ulp(*dtype, *ref);
    *rel = *ref == 0 ? (v == 0 ? 0 : std::numeric_limits<double>::infinity())
                     : std::fabs(v - *ref) / std::fabs(*ref);
  };
  errors(d.value_a, ca.ref_value, &d.ulp_a, &d.rel_a);
  errors(d.value_b, cb.ref_value, &d.ulp_b, &d.rel_b);

  const bool tolerance = d.cls == DivergenceClass::kTolerance;
  if (ca.wrong && cb.wrong && ca.used_witness && cb.used_witness) {
    // Both targets agree with each other against the scalar kernels.
    d.wrong_side = "undecided";
    d.reason = absl::StrCat("both sides miss the cpu-scalar witness: ", ca.why, "; ", cb.why);
  } else if (ca.wrong && cb.wrong) {
    // Both beyond tolerance of their references: only a split blames both.
    d.wrong_side = tolerance ? "undecided" : "both";
    d.reason = absl::StrCat(ca.why, "; ", cb.why);
  } else if (ca.wrong || cb.wrong) {
    d.wrong_side = SideLabel(ca.wrong ? a.target : b.target);
    d.reason =
        absl::StrCat(ca.wrong ? ca.why : cb.why, "; ",
                     ca.wrong ? (cb.is_reference ? "the other side is the reference" : cb.why)
                              : (ca.is_reference ? "the other side is the reference" : ca.why));
  } else {
    d.wrong_side = "undecided";
    d.reason = absl::StrCat(
        "both sides match float64 references computed from their own inputs: the divergence "
        "comes from differences they inherited",
        ca.is_reference || cb.is_reference ? "" : absl::StrCat(" (", ca.why, "; ", cb.why, ")"));
  }
}

}  // namespace divfuzz::oracles
