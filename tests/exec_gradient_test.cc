// Gradient statements run under autograd on every target; the oracle roots a
// gradient divergence at the backward kernel that parts the sides.
#include <ATen/ATen.h>

#include <set>
#include <torch/csrc/autograd/autograd.h>

#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "graph/gradient.h"
#include "gtest/gtest.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/triage.h"
#include "tests/test_util.h"

namespace divfuzz::exec {
namespace {

using testing::MustInfer;
using testing::MustParse;

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         at::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

TEST(Gradients, EqualTorchAutogradGradBitForBitOnTheCpu) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[2,3] layout=transposed = normal(seed=1)
input %w: f32[3,4] = uniform(seed=2, low=-2.0, high=2.0)
input %u: f32[5] = fill(1.0)
input %v: f32[2,4] = normal(seed=3)
%h = aten::mm(%x, %w)
%y = aten::sinh(%h)
%gx, %gw, %gu = autograd::grad(%y, [%x, %w, %u], grad_outputs=%v)
%z = aten::mul.Tensor(%gx, %gx)
output %gx, %gw, %gu, %z
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpu);
  ASSERT_TRUE(r.setup_error.empty()) << r.setup_error;
  for (const NodeResult& n : r.nodes) ASSERT_FALSE(n.error) << n.error->message;
  EXPECT_EQ(r.nodes[0].grad_fn, "MmBackward0");
  EXPECT_EQ(r.nodes[1].grad_fn, "SinhBackward0");

  // The same in plain libtorch.
  at::Tensor x = r.inputs.at("x").transpose(-1, -2).contiguous().transpose(-1, -2);
  x = x.detach().requires_grad_(true);
  at::Tensor w = r.inputs.at("w").detach().requires_grad_(true);
  at::Tensor u = r.inputs.at("u").detach().requires_grad_(true);
  at::Tensor y = at::sinh(at::mm(x, w));
  std::vector<at::Tensor> g =
      torch::autograd::grad({y}, {x, w, u}, {r.inputs.at("v")}, true, false, true);
  EXPECT_TRUE(SameBits(r.nodes[2].outputs[0], g[0]));
  EXPECT_TRUE(SameBits(r.nodes[2].outputs[1], g[1]));
  // %u reaches no output: zeros, as materialize_grads gives.
  EXPECT_FALSE(g[2].defined());
  EXPECT_TRUE(SameBits(r.nodes[2].outputs[2], at::zeros({5})));
  // Later nodes use gradients like any value.
  EXPECT_TRUE(SameBits(r.nodes[3].outputs[0], g[0] * g[0]));
  // dL/dh is captured on the way: what the oracle localizes with.
  ASSERT_TRUE(r.nodes[2].value_grads.count("h"));
  at::Tensor gh = torch::autograd::grad({at::sinh(at::mm(x, w))}, {x}, {r.inputs.at("v")})[0];
  EXPECT_TRUE(SameBits(r.nodes[2].value_grads.at("x"), gh));
}

// The oracle's reruns made every floating input require grad, whether the
// run differentiated it or not: a class weight among them, which nll_loss
// (inside cross_entropy_loss) refuses ("not differentiable with respect to
// argument 'weight'"), and batch_norm's [1, C] weight, whose [C] gradient the
// engine rejects (session 41's INFRA verdict). Under DifferentiateOnly the
// rerun takes the gradients the run took.
TEST(Gradients, ARerunDifferentiatesOnlyWhatTheRunDifferentiated) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[3,4] = normal(seed=3)
input %t: i64[3] = values(0, 1, 3)
input %w: f32[4] = values(0.5, 1.0, 2.0, 0.25)
%y = aten::cross_entropy_loss(%x, %t, %w)
output %y
)");
  const ops::TypeEnv types = MustInfer(p);
  const RunResult built = exec::Run(p, types, Target::kCpu);
  std::map<std::string, at::Tensor> values;
  for (const char* name : {"x", "t", "w"}) values[name] = built.inputs.at(name);
  const std::vector<at::Tensor> incoming{at::ones({})};
  const VjpResult every = RunNodeVjp(p.nodes[0], values, incoming, types, Target::kCpu);
  ASSERT_TRUE(every.result.error.has_value()) << "nll_loss took a weight requiring grad";
  VjpResult only;
  {
    const DifferentiateOnly scope([](const std::string& name) { return name == "x"; });
    only = RunNodeVjp(p.nodes[0], values, incoming, types, Target::kCpu);
  }
  ASSERT_FALSE(only.result.error.has_value()) << only.result.error->message;
  ASSERT_EQ(only.wrt, std::vector<std::string>{"x"});
  // torch::autograd::grad of the same call, the input alone requiring grad.
  const at::Tensor x = built.inputs.at("x").detach().requires_grad_(true);
  const at::Tensor y = at::cross_entropy_loss(x, built.inputs.at("t"), built.inputs.at("w"));
  const at::Tensor want = torch::autograd::grad({y}, {x}, {incoming[0]})[0];
  EXPECT_TRUE(at::equal(only.result.outputs.at(0), want));
  // The scope ends with its block: every floating input again.
  EXPECT_EQ(RunNodeVjp(p.nodes[0], values, incoming, types, Target::kCpu).wrt.size(), 2u);
}

// flatten of a 1-d tensor returns its input itself: one autograd value under
// two names, whose uses the engine sums together (session 43's InputBuffer::add
// false alarm summed two names apart). flatten of a 2-d one is a view.
TEST(Gradients, ANodeThatReturnsItsInputItselfIsRecorded) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[4] = normal(seed=1)
input %m: f32[2,2] = normal(seed=2)
%a = aten::flatten.using_ints(%x)
%b = aten::flatten.using_ints(%m)
output %a, %b
)");
  const RunResult r = exec::Run(p, MustInfer(p), Target::kCpu);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_TRUE(r.nodes[0].returns_input);
  EXPECT_FALSE(r.nodes[1].returns_input);
}

TEST(Gradients, ACompositeOpIsNamedByTheBackwardNodeThatComputes) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[2,3,4] = normal(seed=1)
input %v: f32[2,3,4] = fill(1.0)
%n = aten::instance_norm(%x, None, None, None, None, True, 0.1, 1e-05, False)
%s = aten::sinh(%x)
%w = aten::view(%s, [6, 4])
%g = autograd::grad(%n, [%x], grad_outputs=%v)
output %g, %w
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpu);
  ASSERT_FALSE(r.nodes[0].error) << r.nodes[0].error->message;
  // instance_norm reshapes around batch_norm: the arithmetic is batch_norm's.
  EXPECT_EQ(r.nodes[0].grad_fn, "NativeBatchNormBackward0");
  // A view of another node's result is the view's own, not its producer's.
  EXPECT_EQ(r.nodes[2].grad_fn, "ViewBackward0");
}

TEST(Gradients, TheFloat64TargetsDifferentiateInFloat64) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[3] = values(0.1, 1.0, 3.0)
input %v: f32[3] = fill(1.0)
%y = aten::exp(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpuF64);
  ASSERT_FALSE(r.nodes[1].error);
  ASSERT_EQ(r.nodes[1].exact.size(), 1u);
  EXPECT_EQ(r.nodes[1].exact[0].scalar_type(), at::kDouble);
  EXPECT_EQ(r.nodes[1].outputs[0].scalar_type(), at::kFloat);
  EXPECT_DOUBLE_EQ(r.nodes[1].exact[0][2].item<double>(), std::exp(static_cast<double>(3.0f)));
}

TEST(Gradients, SecondOrderRuns) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f64[3] = values(0.5, 1.0, -2.0)
input %v: f64[3] = fill(1.0)
%y = aten::sin(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
%gg = autograd::grad(%g, [%x], grad_outputs=%v)
output %gg
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpu);
  ASSERT_FALSE(r.nodes[2].error) << r.nodes[2].error->message;
  // d/dx cos(x) = -sin(x).
  EXPECT_TRUE(at::allclose(r.nodes[2].outputs[0], -at::sin(r.inputs.at("x"))));
}

TEST(Gradients, AForwardDivergenceIsNotReportedAgainAtItsBackward) {
  // 1e8 + 1 - 1e8 is 0 in f32 and 1 in float64: relu's gradient then is 0
  // against 1, but the root is the subtraction, not the gradient.
  graph::Program p = MustParse(R"(divfuzz v1
input %a: f32[1] = fill(100000000.0)
input %b: f32[1] = fill(1.0)
input %v: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
%e = aten::sub.Scalar(%d, 0.5)
%r = aten::relu(%e)
%g = autograd::grad(%r, [%b], grad_outputs=%v)
output %g
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult a = exec::Run(p, types, Target::kCpu), b = exec::Run(p, types, Target::kCpuF64);
  oracles::Verdict v = oracles::Compare(p, types, a, b);
  bool grad_seen = false;
  for (const oracles::Divergence& d : v.divergences) {
    if (d.node_index == 4) {
      grad_seen = true;
      EXPECT_FALSE(d.root) << d.detail;
    }
  }
  EXPECT_TRUE(grad_seen);
  ASSERT_FALSE(v.Roots().empty());
  EXPECT_NE(v.Roots()[0]->node_index, 4);
}

TEST(Gradients, RunNodeVjpIsOneKernelsBackwardFromGivenInputs) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[3] = values(0.0, 2.0, -1.0)
%y = aten::sinh(%x)
output %y
)");
  ops::TypeEnv types = MustInfer(p);
  std::map<std::string, at::Tensor> values{{"x", at::tensor({0.0f, 2.0f, -1.0f})}};
  VjpResult cpu = RunNodeVjp(p.nodes[0], values, {at::full({3}, 2.0f)}, types, Target::kCpu);
  ASSERT_FALSE(cpu.result.error);
  EXPECT_EQ(cpu.grad_fn, "SinhBackward0");
  EXPECT_EQ(cpu.wrt, std::vector<std::string>{"x"});
  EXPECT_TRUE(at::allclose(cpu.result.outputs[0], 2 * at::cosh(values["x"])));
  VjpResult f64 = RunNodeVjp(p.nodes[0], values, {at::full({3}, 2.0f)}, types, Target::kCpuF64);
  ASSERT_FALSE(f64.result.error);
  EXPECT_EQ(f64.result.exact[0].scalar_type(), at::kDouble);
  EXPECT_EQ(f64.result.outputs[0].scalar_type(), at::kFloat);
}

// One backward step inside a statement, as a node of its own
// (MakeVjpNode): its first-order gradient and, under RunNodeVjp, its double
// backward equal libtorch's torch.autograd.grad taken twice, bit for bit; a
// second statement captures dL2/d(dL1/dv) under graph::FirstOrderName.
TEST(Gradients, ABackwardStepAsANodeIsTheDoubleBackwardOfItsOp) {
  graph::Program p = MustParse(R"(divfuzz v1
input %h: f32[4] = values(0.5, 1.0, -2.0, 3.0)
input %w: f32[4] = values(1.0, -0.5, 2.0, 0.25)
input %u: f32[4] = values(0.75, 1.5, -1.0, 2.0)
%g = aten::gelu(%h, approximate="tanh")
%gh = autograd::grad([%g], [%h], grad_outputs=[%w])
%ggh = autograd::grad([%gh], [%h], grad_outputs=[%u])
output %ggh
)");
  ops::TypeEnv types = MustInfer(p);
  const std::string w_name = graph::FirstOrderName("g", "gh");
  const std::string out_name = graph::FirstOrderName("h", "gh") + ".0";
  types[w_name] = types.at("g");
  types[out_name] = types.at("h");
  const graph::Node step = MakeVjpNode(p.nodes[0], {w_name}, {"h"}, {out_name});
  EXPECT_EQ(VjpInner(step)->op, "aten::gelu");
  const at::Tensor h = at::tensor({0.5f, 1.0f, -2.0f, 3.0f});
  const at::Tensor w = at::tensor({1.0f, -0.5f, 2.0f, 0.25f});
  const at::Tensor u = at::tensor({0.75f, 1.5f, -1.0f, 2.0f});
  VjpResult r = RunNodeVjp(step, {{"h", h}, {w_name, w}}, {u}, types, Target::kCpu);
  ASSERT_FALSE(r.result.error) << r.result.error->message;
  EXPECT_EQ(r.grad_fn, "GeluBackwardBackward0");
  ASSERT_EQ(r.wrt, (std::vector<std::string>{"h", w_name}));

  at::Tensor th = h.detach().requires_grad_(true), tw = w.detach().requires_grad_(true);
  const at::Tensor y = at::gelu(th, "tanh");
  const at::Tensor first = torch::autograd::grad({y}, {th}, {tw}, true, true)[0];
  const std::vector<at::Tensor> second = torch::autograd::grad({first}, {th, tw}, {u}, true);
  EXPECT_TRUE(SameBits(r.result.outputs[0], second[0]));
  EXPECT_TRUE(SameBits(r.result.outputs[1], second[1]));

  // The program's run: %ggh captured dL2/d(dL1/dg) for the first statement's
  // gradient of %g, which is the step's incoming gradient dL2/dw above with
  // u as the cotangent of dL1/dh.
  RunResult run = exec::Run(p, types, Target::kCpu);
  ASSERT_FALSE(run.nodes[2].error) << run.nodes[2].error->message;
  ASSERT_TRUE(run.nodes[2].value_grads.count(graph::FirstOrderName("h", "gh")));
  EXPECT_TRUE(SameBits(run.nodes[2].outputs[0], second[0]));
}

// A composite op's backward runs through several of its own kernels, which a
// probe observes (and, for the rounding witness, moves by eps in mirrored
// pairs); a plain op's backward is one kernel.
TEST(Gradients, AProbeSeesACompositesOwnBackwardKernelsAndMovesThemByEps) {
  graph::Program p = MustParse(R"(divfuzz v1
input %a: f32[4,3] = normal(seed=1)
input %b: f32[4,3] = normal(seed=2)
%y = aten::cosine_similarity(%a, %b)
%z = aten::sinc(%a)
output %y, %z
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpu);
  std::map<std::string, at::Tensor> values{{"a", r.inputs.at("a")}, {"b", r.inputs.at("b")}};
  const at::Tensor v = at::tensor({1.0f, -2.0f, 0.5f, 3.0f});
  BackwardProbeOptions record;
  record.record = true;
  VjpResult cos = RunNodeVjp(p.nodes[0], values, {v}, types, Target::kCpuF64, false, nullptr,
                             &record);
  ASSERT_FALSE(cos.result.error);
  EXPECT_GE(cos.computing_nodes, 3);
  std::set<std::string> names;
  for (const BackwardStep& s : cos.steps) names.insert(s.name);
  EXPECT_TRUE(names.count("LinalgVectorNormBackward0")) << cos.steps.size();
  EXPECT_TRUE(names.count("DivBackward0"));
  // The probe that only records leaves the gradient bit for bit.
  VjpResult plain = RunNodeVjp(p.nodes[0], values, {v}, types, Target::kCpuF64);
  EXPECT_TRUE(at::equal(plain.result.exact[0], cos.result.exact[0]));
  // A draw and its mirror move the gradient oppositely, by about eps of it.
  BackwardProbeOptions up, down;
  up.noise_eps = down.noise_eps = 1e-6;
  up.noise_seed = down.noise_seed = 3;
  down.mirror = true;
  const at::Tensor base = plain.result.exact[0];
  const at::Tensor gu =
      RunNodeVjp(p.nodes[0], values, {v}, types, Target::kCpuF64, false, nullptr, &up).result.exact[0];
  const at::Tensor gd =
      RunNodeVjp(p.nodes[0], values, {v}, types, Target::kCpuF64, false, nullptr, &down).result.exact[0];
  EXPECT_FALSE(at::equal(gu, base));
  EXPECT_LT((gu + gd - 2 * base).abs().max().item<double>(), 1e-9 * base.abs().max().item<double>());
  EXPECT_LT((gu - base).abs().max().item<double>(), 1e-4 * base.abs().max().item<double>());
  VjpResult sinc = RunNodeVjp(p.nodes[1], values, {at::ones({4, 3})}, types, Target::kCpuF64,
                              false, nullptr, &record);
  EXPECT_EQ(sinc.computing_nodes, 1);
}

TEST(Gradients, ForwardModeMeetsReverseModeOnACorrectKernel) {
  graph::Program p = MustParse(R"(divfuzz v1
input %a: f32[2,3] = normal(seed=1)
input %b: f32[3,2] = normal(seed=2)
%y = aten::mm(%a, %b)
output %y
)");
  ops::TypeEnv types = MustInfer(p);
  RunResult r = exec::Run(p, types, Target::kCpu);
  std::map<std::string, at::Tensor> values{{"a", r.inputs.at("a")}, {"b", r.inputs.at("b")}};
  const at::Tensor u = at::ones({2, 3}), v = at::full({2, 2}, 0.5f);
  NodeResult jvp = RunNodeJvp(p.nodes[0], values, {{"a", u}}, types, Target::kCpu);
  ASSERT_FALSE(jvp.error) << jvp.error->message;
  // J u for mm along a: u @ b.
  EXPECT_TRUE(at::allclose(jvp.outputs[0], at::mm(u, values["b"])));
  VjpResult vjp = RunNodeVjp(p.nodes[0], values, {v}, types, Target::kCpu);
  ASSERT_FALSE(vjp.result.error);
  // <u, J^T v> = <J u, v>.
  EXPECT_NEAR((u * vjp.result.outputs[0]).sum().item<double>(),
              (jvp.outputs[0] * v).sum().item<double>(), 1e-5);
}

TEST(Gradients, AnIndexAddBackwardThatVariesOnCudaIsDocumentedNondeterminism) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[4,3] = normal(seed=1)
input %i: i64[5] = values(0, 1, 1, 3, 0)
input %s: f32[5,3] = normal(seed=2)
input %v: f32[4,3] = fill(1.0)
%y = aten::index_add(%x, 0, %i, %s)
%gx, %gs = autograd::grad(%y, [%x, %s], grad_outputs=%v)
%z = aten::sin(%x)
%h = autograd::grad(%z, [%x], grad_outputs=%v)
output %gx, %gs, %h
)");
  EXPECT_TRUE(oracles::MayVaryBetweenRuns(p, 1));
  oracles::Divergence d;
  d.node_index = 1;
  oracles::MarkNondeterminism(d, p, 1, Target::kCuda, oracles::DefaultPolicy());
  EXPECT_EQ(d.tier, "expected");
  EXPECT_EQ(d.expected_rule, "documented_nondeterminism");
  EXPECT_NE(d.reason.find("backward kernel"), std::string::npos) << d.reason;
  // The same on the CPU is a finding: only CUDA's kernels are documented so.
  oracles::Divergence cpu;
  oracles::MarkNondeterminism(cpu, p, 1, Target::kCpu, oracles::DefaultPolicy());
  EXPECT_EQ(cpu.tier, "divergence");
  EXPECT_EQ(cpu.wrong_side, "cpu");
  // sin's backward after it is no such kernel, but index_add ran before it in
  // the program: the whole forward before a statement counts, conservatively.
  EXPECT_TRUE(oracles::MayVaryBetweenRuns(p, 3));
  graph::Program q = MustParse(R"(divfuzz v1
input %x: f32[4] = normal(seed=1)
input %v: f32[4] = fill(1.0)
%z = aten::sin(%x)
%h = autograd::grad(%z, [%x], grad_outputs=%v)
output %h
)");
  EXPECT_FALSE(oracles::MayVaryBetweenRuns(q, 1));
}

}  // namespace
}  // namespace divfuzz::exec

namespace divfuzz {
namespace {

// The exact witness's derivative (ExactOptions::derivative_wrt): MPFR central
// differences agree with the closed forms, fall back to an absolute step where
// a relative one cancels (exp at 1e-300), and say "unknown" (NaN) where the
// function has no derivative (sqrt at 0).
std::vector<double> ExactDerivative(const std::string& text, const std::string& wrt) {
  const graph::Program p = testing::MustParse(text);
  const ops::TypeEnv types = testing::MustInfer(p);
  exec::RunResult r = exec::Run(p, types, exec::Target::kCpuF64);
  exec::ExactOptions options;
  options.derivative_wrt = wrt;
  std::optional<exec::ExactResult> e = exec::RunExact(p.nodes[0], r.inputs, types, options);
  if (!e || e->result.exact.empty()) return {};
  at::Tensor d = e->result.exact[0].to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

TEST(ExactDerivative, CentralDifferencesInMpfrMatchTheClosedForms) {
  std::vector<double> sin = ExactDerivative(R"(divfuzz v1
input %x: f64[3] = values(0.5, 1e-30, -2.0)
%y = aten::sin(%x)
output %y
)", "x");
  ASSERT_EQ(sin.size(), 3u);
  for (auto [i, x] : {std::pair{0, 0.5}, {1, 1e-30}, {2, -2.0}}) {
    EXPECT_NEAR(sin[i], std::cos(x), 1e-15) << x;
  }
  std::vector<double> exp = ExactDerivative(R"(divfuzz v1
input %x: f64[2] = values(1e-300, 40.0)
%y = aten::exp(%x)
output %y
)", "x");
  ASSERT_EQ(exp.size(), 2u);
  EXPECT_DOUBLE_EQ(exp[0], 1.0);
  EXPECT_NEAR(exp[1] / std::exp(40.0), 1.0, 1e-15);
  std::vector<double> log = ExactDerivative(R"(divfuzz v1
input %x: f64[1] = values(1e-300)
%y = aten::log(%x)
output %y
)", "x");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NEAR(log[0] / 1e300, 1.0, 1e-14);
  // Both operands read %x: hypot(x, x) = sqrt(2) |x|.
  std::vector<double> hypot = ExactDerivative(R"(divfuzz v1
input %x: f64[2] = values(3.0, -0.5)
%y = aten::hypot(%x, %x)
output %y
)", "x");
  ASSERT_EQ(hypot.size(), 2u);
  EXPECT_NEAR(hypot[0], std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(hypot[1], -std::sqrt(2.0), 1e-15);
  std::vector<double> sqrt = ExactDerivative(R"(divfuzz v1
input %x: f64[2] = values(0.0, 4.0)
%y = aten::sqrt(%x)
output %y
)", "x");
  ASSERT_EQ(sqrt.size(), 2u);
  EXPECT_TRUE(std::isnan(sqrt[0]));
  EXPECT_NEAR(sqrt[1], 0.25, 1e-15);
}

}  // namespace
}  // namespace divfuzz
