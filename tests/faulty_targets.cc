#include "tests/faulty_targets.h"

#include <ATen/ops/full_like.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/linalg_det.h>
#include <ATen/ops/where.h>

#include <cmath>
#include <limits>

#include "exec/executor.h"
#include "oracles/attribution.h"

namespace divfuzz::testing {

exec::RunResult FaultyLogdetRun(const graph::Program& program, const ops::TypeEnv& types,
                                exec::Target target, double threshold) {
  exec::RunResult r = exec::Run(program, types, target);
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].op != "aten::logdet" || r.nodes[i].error) continue;
    const auto inputs = oracles::NodeInputs(program, static_cast<int>(i), r);
    const at::Tensor m = inputs.at(program.nodes[i].args[0].value.s).to(at::kDouble);
    const double det = std::fabs(at::linalg_det(m).max().item<double>());
    if (det < threshold) {
      r.nodes[i].outputs[0] =
          at::full_like(r.nodes[i].outputs[0], -std::numeric_limits<double>::infinity());
    }
  }
  return r;
}

exec::RunResult NondeterministicRun(const graph::Program& program, const ops::TypeEnv& types,
                                    exec::Target target) {
  static int calls = 0;
  ++calls;
  exec::RunResult r = exec::Run(program, types, target);
  for (exec::NodeResult& n : r.nodes) {
    for (at::Tensor& t : n.outputs) {
      if (t.defined() && at::isFloatingType(t.scalar_type())) t = t.add(1e-3 * calls);
    }
  }
  return r;
}

exec::RunResult NanPolynomialRun(const graph::Program& program, const ops::TypeEnv& types,
                                 exec::Target target, bool uninitialized) {
  static int calls = 0;  // the unset variable holds something new on every call
  ++calls;
  exec::RunResult r = exec::Run(program, types, exec::Target::kCpu);
  r.target = target;
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    const graph::Node& node = program.nodes[i];
    if (node.op.find("_polynomial_") == std::string::npos || r.nodes[i].error) continue;
    const auto inputs = oracles::NodeInputs(program, static_cast<int>(i), r);
    // The programs of the tests: x a value, n a number.
    const at::Tensor x = inputs.at(node.args[0].value.s);
    if (node.args[1].value.f < 1) continue;
    at::Tensor& out = r.nodes[i].outputs[0];
    out =
        at::where(at::isnan(x), at::full_like(out, uninitialized ? 1e30 + 1e24 * calls : NAN), out);
  }
  return r;
}

exec::RunResult NanAboveRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op, double threshold) {
  exec::RunResult r = exec::Run(program, types, exec::Target::kCpu);
  r.target = target;
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].QualifiedName() != op || r.nodes[i].error) continue;
    const auto inputs = oracles::NodeInputs(program, static_cast<int>(i), r);
    const at::Tensor x = inputs.at(program.nodes[i].args[0].value.s);
    at::Tensor& out = r.nodes[i].outputs[0];
    out = at::where(x.gt(threshold), at::full_like(out, NAN), out);
  }
  return r;
}

exec::RunResult OneSidedErrorRun(const graph::Program& program, const ops::TypeEnv& types,
                                 exec::Target target, const std::string& op,
                                 const std::string& message) {
  exec::RunResult r = exec::Run(program, types, exec::Target::kCpu);
  r.target = target;
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].QualifiedName() != op) continue;
    exec::NodeError e;
    e.kind = exec::SaysDtypeGap(message) ? exec::NodeError::Kind::kNotImplemented
                                         : exec::NodeError::Kind::kRaised;
    e.message = message;
    r.nodes[i].error = e;
    r.nodes[i].outputs.clear();
  }
  return r;
}

exec::RunResult ScaledOpRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op, double factor) {
  exec::RunResult r = exec::Run(program, types, exec::Target::kCpu);
  r.target = target;
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].QualifiedName() != op) continue;
    for (at::Tensor& t : r.nodes[i].outputs) {
      if (t.defined() && (at::isFloatingType(t.scalar_type()) || t.is_complex())) {
        t = t.mul(1 + factor);
      }
    }
  }
  return r;
}

exec::RunResult ReplaceElementRun(const graph::Program& program, const ops::TypeEnv& types,
                                  exec::Target target, const std::string& op, int64_t element,
                                  double value) {
  exec::RunResult r = exec::Run(program, types, exec::Target::kCpu);
  r.target = target;
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].QualifiedName() != op || r.nodes[i].outputs.empty()) continue;
    at::Tensor t = r.nodes[i].outputs[0].clone(at::MemoryFormat::Contiguous);
    t.reshape({-1})[element].fill_(value);
    r.nodes[i].outputs[0] = t;
  }
  return r;
}

exec::RunResult RacingOpRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op) {
  static int calls = 0;  // a new amount on every call, so two runs always differ
  ++calls;
  exec::RunResult r = exec::Run(program, types, target);
  for (size_t i = 0; i < program.nodes.size() && i < r.nodes.size(); ++i) {
    if (program.nodes[i].QualifiedName() != op) continue;
    for (at::Tensor& t : r.nodes[i].outputs) {
      if (!t.defined() || !at::isFloatingType(t.scalar_type()) || t.numel() == 0) continue;
      at::Tensor moved = t.clone(at::MemoryFormat::Contiguous);
      at::Tensor first = moved.reshape({-1}).narrow(0, 0, 1);
      // Relative to the value so float16 moves too: 2^-6 per call.
      first.add_(first.abs().add(1).mul(std::ldexp(1.0, -6) * calls));
      t = moved;
    }
  }
  return r;
}

}  // namespace divfuzz::testing
