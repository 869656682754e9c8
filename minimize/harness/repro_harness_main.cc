// divfuzz-harness begin header
// The generic part of every divfuzz C++ repro (repro_cpp/main.cpp):
// minimize/emit_cpp.cc embeds this file at build time and emits it, with the
// program's parts, as one standalone main.cpp. It replaces each block between
// the lines "divfuzz-harness begin NAME" and "divfuzz-harness end NAME"
// (minimize/emit_common.h): header with the repro's comment header,
// program-constants with the program's constants, constants with the numbers
// of the policy in effect (oracles::Policy) and the other constants declared
// once in C++ (minimize/emit_common.h), program with MakeInputs(), Layouts()
// and Program(). What stands in those blocks here only makes this file a
// complete program: the build compiles it (divfuzz_repro_harness_cpp).
// divfuzz-harness end header

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dirent.h>
#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/wait.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const double kInf = INFINITY;
const double kNaN = NAN;

// A NaN bit for bit (docs/FORMAT.md's -nan_0xF: the sign and float64 fraction).
[[maybe_unused]] double NaNBits(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

// divfuzz-harness begin program-constants
const char* const kTitle = "the harness alone";
const char* const kSeen = "";
const char* const kTargetA = "cpu";
const char* const kTargetB = "cpu-f64";
const int kNode = 0;
const int kOutput = 0;
const char* const kValue = "out";
const char* const kOp = "aten::none";
const char* const kRerun = "";
const int kRuns = 1;
const int kRunSeconds = 1;
const int kAttempts = 1;
const char* const kFailure = "";
const char* const kFailureTarget = "";
const int kHangSeconds = 1;
const char* const kInvariants = "";
const bool kNanRule = false;
const std::optional<at::ScalarType> kValueDType = std::nullopt;
const long long kExactElement = -1;
const std::map<std::string, double> kExact = {};
const std::set<int> kGuarded = {};
const std::set<std::string> kWrt = {};
const bool kGradient = false;
const char* const kBackward = "";
const char* const kBackend = "";

// divfuzz-harness end program-constants
// ------------------------------------------------------------------------
// The harness below is the same in every divfuzz C++ repro; the program is at the end.
//
// What it does, in the order of Main(); each step is a section below.
//   1. Arguments and reruns: the two targets (default: the finding's pair) or
//      --dump-inputs; this program reruns itself where a kernel choice is made
//      at start-up (glibc's malloc cache off for a nondeterminism check, ATen's
//      scalar kernels for cpu-scalar).
//   2. Run the program on every target up to the diverging node (Run): the
//      inputs placed on the target (PlaceInputs), each node called through the
//      c10 dispatcher and checked (CallChecked), and on cpu and cuda the node's
//      float64 reference from that side's own inputs (ReferenceOf).
//   3. Compare the two sides as divfuzz's oracle does (Compare), trying a
//      racing kernel up to kAttempts times (CompareWithAttempts).
//   4. Who is wrong: each side against its own float64 reference
//      (JudgeAgainstReference), or divfuzz's exact value where it decided
//      (CheckExact); prints VERDICT and WRONG SIDE (CheckDivergence).
// A nondeterminism finding (kRerun) runs one target against itself instead of
// steps 3-4 (CheckNondeterminism); a hang or crash finding runs its target in a
// child process instead of steps 2-4 (CheckFailure, FailureChild).
// Exit status: 1 when the finding reproduces, 0 when not, 2 when it cannot run.

// Constants rendered from divfuzz's own declarations (minimize/emit_common.h).
struct DTypeTolerance {  // the policy's at the diverging op
  at::ScalarType dtype;
  double rtol, atol;
};
struct FloatBits {
  at::ScalarType dtype;
  int mantissa;       // bits
  int tiny_exponent;  // of the smallest subnormal
};
struct CudaSwitch {  // divfuzz's cuda+SWITCH targets (exec/cuda_variants.def)
  const char* name;
  const char* library;
  void (*make)(at::Context& ctx);
};
// divfuzz-harness begin constants
const std::vector<CudaSwitch> kSwitches = {};
const std::vector<DTypeTolerance> kTolerances = {};
const std::vector<FloatBits> kFloatBits = {};
const std::vector<std::string> kTargets = {};
const std::vector<std::string> kCudaFaults = {};
const int kPerturbBytes[2] = {0, 0};  // odd runs, even runs
const std::vector<std::string> kDtypeGaps = {};
const char* const kMallocCacheOff = "STAND_IN";
const char* const kNoMallocCache = "";
const int kStartSeconds = 0;
const double kPollSeconds = 1;
const int kExactLimit = 1;
const char* const kInputWritten = "wrote into its input";
// divfuzz-harness end constants

// ==== The program's parts: literals, nodes, inputs ===========================

// A node argument as the program writes it.
struct Lit {
  enum Kind { kNone, kBool, kInt, kFloat, kString, kDType, kValue, kList } kind = kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  at::ScalarType dtype = at::kFloat;
  std::vector<Lit> list;
};
Lit Make(Lit::Kind kind) {
  Lit l;
  l.kind = kind;
  return l;
}
Lit N() { return Lit{}; }
// clang-format off
Lit B(bool v) { Lit l = Make(Lit::kBool); l.b = v; return l; }
Lit I(int64_t v) { Lit l = Make(Lit::kInt); l.i = v; return l; }
Lit D(double v) { Lit l = Make(Lit::kFloat); l.f = v; return l; }
Lit S(std::string v) { Lit l = Make(Lit::kString); l.s = std::move(v); return l; }
Lit T(at::ScalarType v) { Lit l = Make(Lit::kDType); l.dtype = v; return l; }
Lit V(std::string v) { Lit l = Make(Lit::kValue); l.s = std::move(v); return l; }
Lit L(std::vector<Lit> v) { Lit l = Make(Lit::kList); l.list = std::move(v); return l; }
// clang-format on

struct Arg {
  std::string name;  // empty: positional
  Lit value;
};

struct Node {
  std::vector<std::string> results;
  std::string op;        // "aten::add"
  std::string overload;  // "Tensor", or empty
  std::vector<Arg> args;
};

std::map<std::string, at::Tensor> MakeInputs();
std::map<std::string, std::string> Layouts();
std::vector<Node> Program();

// The same values in the layout the program names, as divfuzz builds it.
at::Tensor ApplyLayout(const at::Tensor& t, const std::string& layout) {
  if (layout == "transposed" && t.dim() >= 2) {
    return t.transpose(-1, -2).contiguous().transpose(-1, -2);
  }
  if (layout == "strided" && t.dim() >= 1) {
    std::vector<int64_t> sizes = t.sizes().vec();
    sizes.back() *= 2;
    at::Tensor view = at::zeros(sizes, t.options()).slice(-1, 0, sizes.back(), 2);
    view.copy_(t);
    return view;
  }
  if (layout == "channels_last" && t.dim() == 4) {
    return t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return t;
}

// x (float64 or complex128) as t, every NaN keeping its sign and the top fraction
// bits t has, quiet bit set, as divfuzz builds inputs (torch's bfloat16 cast
// writes 0x7fc0 or 0xffff for a NaN whatever its sign).
at::Tensor Cast(const at::Tensor& x, at::ScalarType t) {
  at::Tensor out = x.to(t).contiguous();
  const at::Tensor src = (x.is_complex() ? at::view_as_real(x) : x).contiguous();
  const at::Tensor dst = out.is_complex() ? at::view_as_real(out) : out;
  int frac = 0, exp = 0;
  if (dst.scalar_type() == at::kFloat) {
    frac = 23, exp = 8;
  } else if (dst.scalar_type() == at::kHalf) {
    frac = 10, exp = 5;
  } else if (dst.scalar_type() == at::kBFloat16) {
    frac = 7, exp = 8;
  }
  if (frac == 0 || src.scalar_type() != at::kDouble) return out;
  const double* p = src.data_ptr<double>();
  char* q = static_cast<char*>(dst.data_ptr());
  for (int64_t i = 0; i < src.numel(); ++i) {
    if (!std::isnan(p[i])) continue;
    uint64_t b;
    std::memcpy(&b, &p[i], sizeof(b));
    const uint32_t nan = static_cast<uint32_t>(
        (b >> 63) << (frac + exp) | ((uint64_t{1} << exp) - 1) << frac |
        (b & ((uint64_t{1} << 52) - 1)) >> (52 - frac) | uint64_t{1} << (frac - 1));
    if (frac == 23) {
      std::memcpy(q + i * 4, &nan, 4);
    } else {
      const uint16_t half = static_cast<uint16_t>(nan);
      std::memcpy(q + i * 2, &half, 2);
    }
  }
  return out;
}

at::Tensor Values(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType t) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Cast(at::from_blob(v.data(), {n}, at::kDouble).clone(), t).reshape(shape).contiguous();
}
at::Tensor Fill(double x, std::vector<int64_t> shape, at::ScalarType t) {
  return Cast(at::full(shape, x, at::TensorOptions().dtype(at::kDouble)), t);
}
at::Tensor ComplexValues(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType t) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  at::Tensor parts = at::from_blob(v.data(), {n, 2}, at::kDouble).clone();
  return Cast(at::view_as_complex(parts), t).reshape(shape).contiguous();
}
at::Tensor ComplexFill(double re, double im, std::vector<int64_t> shape, at::ScalarType t) {
  std::vector<double> v;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t k = 0; k < n; ++k) {
    v.push_back(re);
    v.push_back(im);
  }
  return ComplexValues(v, shape, t);
}

struct Failure {
  std::string message;
  int node = -1;
};

// A target's diverging output (a decomposition: all its outputs) as CPU
// tensors, or the failure of its node (or of one it depends on).
struct Result {
  std::vector<at::Tensor> values;
  std::optional<Failure> failure;
};

std::string BitDifference(const at::Tensor& x, const at::Tensor& y);  // below

std::string FirstLine(std::string s) {
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}

at::Tensor Upcast(const at::Tensor& t) {
  if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble);
  if (at::isFloatingType(t.scalar_type())) return t.to(at::kDouble);
  return t;
}

// ==== Calling one node through the c10 dispatcher ============================

using Lookup = std::function<at::Tensor(const std::string&)>;

// Looks names up in `env` (which must outlive the lookup).
Lookup LookupIn(const std::map<std::string, at::Tensor>& env) {
  return [&env](const std::string& n) {
    auto it = env.find(n);
    return it == env.end() ? at::Tensor() : it->second;
  };
}

[[noreturn]] void Mismatch(const c10::Argument& arg, const std::string& expected) {
  throw std::invalid_argument("argument '" + arg.name() + "' expects " + expected);
}

at::Tensor TensorOf(const c10::Argument& arg, const Lit& lit, const Lookup& lookup) {
  if (lit.kind != Lit::kValue) Mismatch(arg, "a tensor value");
  at::Tensor t = lookup(lit.s);
  if (!t.defined()) Mismatch(arg, "a defined value, %" + lit.s + " is not");
  return t;
}

// A literal as the schema's argument type wants it (as divfuzz's executor does).
c10::IValue Convert(const c10::Argument& arg, const c10::TypePtr& type, const Lit& lit,
                    const Lookup& lookup) {
  using K = c10::TypeKind;
  switch (type->kind()) {
    case K::OptionalType:
      if (lit.kind == Lit::kNone) return c10::IValue();
      return Convert(arg, type->castRaw<c10::OptionalType>()->getElementType(), lit, lookup);
    case K::TensorType:
      return c10::IValue(TensorOf(arg, lit, lookup));
    case K::IntType:
    case K::SymIntType:
      if (lit.kind == Lit::kInt) return c10::IValue(lit.i);
      if (lit.kind == Lit::kBool) return c10::IValue(static_cast<int64_t>(lit.b));
      Mismatch(arg, "an int");
    case K::FloatType:
    case K::SymFloatType:
      if (lit.kind == Lit::kFloat) return c10::IValue(lit.f);
      if (lit.kind == Lit::kInt) return c10::IValue(static_cast<double>(lit.i));
      Mismatch(arg, "a float");
    case K::BoolType:
    case K::SymBoolType:
      if (lit.kind == Lit::kBool) return c10::IValue(lit.b);
      Mismatch(arg, "a bool");
    case K::NumberType:
      if (lit.kind == Lit::kInt) return c10::IValue(c10::Scalar(lit.i));
      if (lit.kind == Lit::kFloat) return c10::IValue(c10::Scalar(lit.f));
      if (lit.kind == Lit::kBool) return c10::IValue(c10::Scalar(lit.b));
      Mismatch(arg, "a number");
    case K::ScalarTypeType:
      if (lit.kind == Lit::kDType) return c10::IValue(lit.dtype);
      Mismatch(arg, "a dtype");
    case K::StringType:
      if (lit.kind == Lit::kString) return c10::IValue(lit.s);
      Mismatch(arg, "a string");
    case K::ListType: {
      const c10::TypePtr elem = type->castRaw<c10::ListType>()->getElementType();
      const bool ints = elem->kind() == K::IntType || elem->kind() == K::SymIntType;
      if (lit.kind != Lit::kList && !ints) Mismatch(arg, "a list");
      const std::vector<Lit> items = lit.kind == Lit::kList ? lit.list : std::vector<Lit>{lit};
      if (ints) {
        std::vector<int64_t> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kInt) Mismatch(arg, "a list of ints");
          v.push_back(i.i);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::FloatType) {
        std::vector<double> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kFloat && i.kind != Lit::kInt) Mismatch(arg, "a list of floats");
          v.push_back(i.kind == Lit::kInt ? static_cast<double>(i.i) : i.f);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::BoolType) {
        c10::List<bool> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kBool) Mismatch(arg, "a list of bools");
          v.push_back(i.b);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::TensorType) {
        c10::List<at::Tensor> v;
        for (const Lit& i : items) v.push_back(TensorOf(arg, i, lookup));
        return c10::IValue(v);
      }
      Mismatch(arg, "a " + type->str());
    }
    default:
      if (lit.kind == Lit::kNone) return c10::IValue();
      Mismatch(arg, "a " + type->str() + "; only None is supported");
  }
}

// Positional arguments in order, name=value by name, schema defaults for the rest.
torch::jit::Stack BuildStack(const c10::FunctionSchema& schema, const Node& node,
                             const Lookup& lookup) {
  const std::vector<c10::Argument>& params = schema.arguments();
  std::vector<const Lit*> bound(params.size(), nullptr);
  size_t next = 0;
  for (const Arg& a : node.args) {
    if (a.name.empty()) {
      if (next >= params.size() || params[next].kwarg_only()) {
        throw std::invalid_argument("too many positional arguments for " + schema.name());
      }
      bound[next++] = &a.value;
      continue;
    }
    size_t i = 0;
    while (i < params.size() && params[i].name() != a.name) ++i;
    if (i == params.size()) {
      throw std::invalid_argument(schema.name() + " has no argument named '" + a.name + "'");
    }
    bound[i] = &a.value;
  }
  torch::jit::Stack stack;
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i] == nullptr) {
      if (!params[i].default_value().has_value()) {
        throw std::invalid_argument("missing argument '" + params[i].name() + "'");
      }
      stack.push_back(*params[i].default_value());
    } else {
      stack.push_back(Convert(params[i], params[i].real_type(), *bound[i], lookup));
    }
  }
  return stack;
}

std::vector<std::string> Uses(const Node& node) {
  std::vector<std::string> uses;
  std::function<void(const Lit&)> visit = [&](const Lit& l) {
    if (l.kind == Lit::kValue) uses.push_back(l.s);
    for (const Lit& item : l.list) visit(item);
  };
  for (const Arg& a : node.args) visit(a.value);
  return uses;
}

// ==== Gradient statements: torch::autograd::grad =============================

const char* const kGradOp = "autograd::grad";

bool IsGrad(const Node& node) { return node.op == kGradOp && node.overload.empty(); }

// The names a %ref or a list of them holds.
std::vector<std::string> Names(const Lit& lit) {
  if (lit.kind == Lit::kValue) return {lit.s};
  std::vector<std::string> names;
  for (const Lit& item : lit.list) names.push_back(item.s);
  return names;
}

// `%gx, %gw = autograd::grad(%y, [%x, %w], grad_outputs=%v)` as divfuzz runs
// it: torch::autograd::grad of the outputs that require grad, with their
// cotangents, allow_unused, zeros for an input no output reaches, and
// create_graph when a later statement differentiates these gradients again
// (second order). One gradient per input, in order. Throws on any failure.
torch::jit::Stack CallGrad(const Node& node, const Lookup& lookup, bool create_graph) {
  std::vector<std::string> outputs, wrt, cotangents;
  size_t positional = 0;
  for (const Arg& a : node.args) {
    const std::string name = a.name.empty() ? (positional == 0   ? "outputs"
                                                 : positional == 1 ? "inputs"
                                                                   : "grad_outputs")
                                             : a.name;
    if (a.name.empty()) ++positional;
    (name == "outputs" ? outputs : name == "inputs" ? wrt : cotangents) = Names(a.value);
  }
  if (outputs.size() != cotangents.size() || wrt.size() != node.results.size()) {
    throw std::invalid_argument("malformed gradient statement");
  }
  std::vector<at::Tensor> ys, vs, xs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor y = lookup(outputs[i]);
    if (!y.defined() || !y.requires_grad()) continue;
    ys.push_back(y);
    vs.push_back(lookup(cotangents[i]).detach());
  }
  for (const std::string& x : wrt) xs.push_back(lookup(x));
  std::vector<at::Tensor> grads(xs.size());
  if (!ys.empty()) {
    grads = torch::autograd::grad(ys, xs, vs, /*retain_graph=*/true, create_graph,
                                  /*allow_unused=*/true);
  }
  torch::jit::Stack stack;
  for (size_t i = 0; i < xs.size(); ++i) {
    stack.emplace_back(grads[i].defined() ? grads[i] : at::zeros_like(xs[i].detach()));
  }
  return stack;
}

// Whether a gradient statement after node `index` differentiates again.
bool LaterGrad(const std::vector<Node>& nodes, int index) {
  for (size_t j = static_cast<size_t>(index) + 1; j < nodes.size(); ++j) {
    if (IsGrad(nodes[j])) return true;
  }
  return false;
}

// Calls one node through the c10 dispatcher; throws on any failure.
torch::jit::Stack Call(const Node& node, const Lookup& lookup) {
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) {
    throw std::invalid_argument("no ATen operator named " + node.op + "." + node.overload);
  }
  torch::jit::Stack stack = BuildStack(handle->schema(), node, lookup);
  handle->callBoxed(&stack);
  if (stack.size() != node.results.size()) {
    throw std::runtime_error(node.op + " returned " + std::to_string(stack.size()) +
                             " values; the program names " + std::to_string(node.results.size()));
  }
  return stack;
}

// ==== What is kept and compared of the diverging node ========================

at::Tensor Snapshot(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() ? t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous()
                       : t;
  }
  if (v.isScalar()) return at::scalar_tensor(v.toScalar(), at::TensorOptions().dtype(at::kDouble));
  return at::Tensor();
}

// What a run keeps of the diverging node: its output, or all of a
// decomposition's.
std::vector<at::Tensor> Capture(const torch::jit::Stack& stack) {
  if (*kInvariants == '\0') return {Snapshot(stack[kOutput])};
  std::vector<at::Tensor> all;
  for (const c10::IValue& v : stack) all.push_back(Snapshot(v));
  return all;
}

// What is compared: the output, or a decomposition's invariants (computed in
// float64, rounded back), as divfuzz's oracle does.
std::vector<at::Tensor> Comparable(const std::vector<at::Tensor>& outs) {
  const std::string inv = kInvariants;
  if (inv.empty() || outs.empty()) return outs;
  for (const at::Tensor& t : outs) {
    if (!t.defined()) return outs;
  }
  const at::ScalarType dtype = outs[0].scalar_type();
  std::vector<at::Tensor> f;
  for (const at::Tensor& t : outs) {
    f.push_back(t.to(at::isComplexType(t.scalar_type()) ? at::kComplexDouble : at::kDouble));
  }
  std::vector<at::Tensor> r;
  if (inv == "qr" && f.size() >= 2) {  // Q R = A, and |diag(R)| is unique
    r = {f[1].diagonal(0, -2, -1).abs(), f[0].matmul(f[1])};
  } else if (inv == "svd" && f.size() >= 3) {  // U diag(S) Vh = A, and S is unique
    r = {f[1], f[0].mul(f[1].unsqueeze(-2)).matmul(f[2])};
  } else if (inv == "svd_v" && f.size() >= 3) {  // torch.svd: V, U and V maybe complete
    const int64_t k = f[1].size(-1);
    r = {f[1], f[0].narrow(-1, 0, k).mul(f[1].unsqueeze(-2)).matmul(f[2].narrow(-1, 0, k).mH())};
  } else if (inv == "eigh" && f.size() >= 2) {  // V diag(w) V^T = sym(A), and w is unique
    r = {f[0], f[1].mul(f[0].unsqueeze(-2)).matmul(f[1].mT())};
  } else if (inv == "lu" && f.size() >= 3) {  // P L U = A
    r = {f[0].matmul(f[1]).matmul(f[2])};
  } else if (inv == "eig") {  // the spectrum as a multiset
    const at::Tensor w = outs[0].to(at::kComplexDouble);
    const at::ScalarType part = dtype == at::kComplexFloat ? at::kFloat : at::kDouble;
    return {std::get<0>(at::real(w).sort(-1)).to(part).contiguous(),
            std::get<0>(at::imag(w).sort(-1)).to(part).contiguous()};
  } else {
    return outs;
  }
  for (at::Tensor& t : r) t = t.to(dtype).contiguous();
  return r;
}

// Rounds each output to the dtype of the same output of `like`.
std::vector<at::Tensor> RoundLike(std::vector<at::Tensor> values,
                                  const std::vector<at::Tensor>& like) {
  for (size_t k = 0; k < values.size() && k < like.size(); ++k) {
    if (values[k].defined() && like[k].defined()) values[k] = values[k].to(like[k].scalar_type());
  }
  return values;
}

// An orthogonal polynomial's value at a NaN x is NaN when n >= 1, but
// PyTorch's kernel returns a variable it never set there, the float64 one
// too: the reference says NaN (divfuzz's oracles/nan_rule.h).
void CorrectReference(const Node& node, const Lookup& lookup, std::vector<at::Tensor>* values) {
  if (!kNanRule || values->empty() || !(*values)[0].defined() ||
      !(*values)[0].is_floating_point()) {
    return;
  }
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) return;
  const torch::jit::Stack args = BuildStack(handle->schema(), node, lookup);
  if (args.size() < 2) return;
  const auto as_double = [](const c10::IValue& v) {
    return v.isTensor() ? v.toTensor().detach().to(at::kCPU).to(at::kDouble)
                        : at::scalar_tensor(v.toScalar().toDouble(), at::kDouble);
  };
  const at::Tensor nan = at::isnan(as_double(args[0])).logical_and(at::ge(as_double(args[1]), 1));
  at::Tensor& out = (*values)[0];
  if (nan.sizes() == out.sizes()) out = at::where(nan, at::full_like(out, NAN), out);
}

// ==== Step 2: running the program on one target ==============================

// The program's inputs on a target: upcast to float64 for cpu-f64, moved to
// the GPU for cuda, then laid out as the program names.
std::map<std::string, at::Tensor> PlaceInputs(bool cuda, bool f64) {
  std::map<std::string, at::Tensor> env;
  const std::map<std::string, std::string> layouts = Layouts();
  for (auto& [name, t] : MakeInputs()) {
    at::Tensor x = f64 ? Upcast(t) : t;
    const auto layout = layouts.find(name);
    env[name] = ApplyLayout(cuda ? x.to(at::kCUDA) : x,
                            layout == layouts.end() ? "" : layout->second);
  }
  return env;
}

// The failure a node inherits from a value it uses (the last such use's).
std::optional<Failure> InheritedFailure(const Node& node,
                                        const std::map<std::string, Failure>& failed) {
  std::optional<Failure> failure;
  for (const std::string& u : Uses(node)) {
    auto it = failed.find(u);
    if (it != failed.end()) failure = it->second;
  }
  return failure;
}

// The oracle's per-node reference: node `index` rerun on the CPU in float64
// from the inputs this side gave it (its values, or its failure).
Result ReferenceOf(const Node& node, int index, const std::map<std::string, at::Tensor>& env) {
  std::map<std::string, at::Tensor> up;
  for (const std::string& u : Uses(node)) {
    auto it = env.find(u);
    if (it != env.end()) up[u] = Upcast(it->second.detach().to(at::kCPU)).clone();
  }
  const Lookup up_lookup = LookupIn(up);
  Result ref;
  try {
    ref.values = Capture(Call(node, up_lookup));
    CorrectReference(node, up_lookup, &ref.values);
  } catch (const std::exception& e) {
    ref.failure = Failure{FirstLine(e.what()), index};
  }
  return ref;
}

// Calls node `index` as divfuzz's executor does: on cuda it synchronizes, and
// a linear-algebra op (kGuarded) must leave its inputs as they were. An input
// it wrote into is restored (the nodes after it read what the program made)
// and the node fails. Throws on any failure.
torch::jit::Stack CallChecked(const Node& node, int index, bool cuda,
                              std::map<std::string, at::Tensor>* env, const Lookup& lookup) {
  std::vector<std::pair<std::string, at::Tensor>> kept;
  for (const std::string& u : kGuarded.count(index) ? Uses(node) : std::vector<std::string>{}) {
    auto it = env->find(u);
    if (it != env->end() && it->second.defined() && it->second.numel() > 0 &&
        (it->second.is_floating_point() || it->second.is_complex())) {
      kept.emplace_back(u, it->second.detach().clone());
    }
  }
  torch::jit::Stack stack = Call(node, lookup);
  if (cuda) at::detail::getCUDAHooks().deviceSynchronize(0);
  for (const auto& [u, before] : kept) {
    if (!BitDifference(before, (*env)[u].detach()).empty()) {
      at::NoGradGuard no_grad;  // an input may require grad
      (*env)[u].detach().copy_(before);
      throw std::runtime_error(std::string(kInputWritten) + " %" + u +
                               ", which its schema does not declare mutable");
    }
  }
  return stack;
}

Result Run(const std::string& target, std::optional<Result>* reference);

// A gradient statement cannot run alone: its float64 reference is the whole
// program run in float64 (cpu-f64) from the same inputs, for every side.
Result WholeF64() {
  static const Result whole = Run("cpu-f64", nullptr);
  return whole;
}

// Runs the program on a target up to the diverging node and returns that
// node's output. A node that fails, or uses a value of one that did, records
// its failure. On cpu and cuda, `reference` receives the diverging node's
// float64 reference from this side's own inputs (ReferenceOf; a gradient
// statement's: WholeF64). The inputs in kWrt require grad (after their
// layout, as divfuzz's executor does), and a program with gradient
// statements runs with autograd on.
Result Run(const std::string& target, std::optional<Result>* reference) {
  const bool cuda = target == "cuda";
  std::map<std::string, at::Tensor> env = PlaceInputs(cuda, target == "cpu-f64");
  for (const std::string& x : kWrt) {
    auto it = env.find(x);
    if (it != env.end()) it->second = it->second.detach().requires_grad_(true);
  }
  const Lookup lookup = LookupIn(env);
  std::map<std::string, Failure> failed;  // by the value names of failed nodes
  const std::vector<Node> nodes = Program();
  Result result;
  result.failure = Failure{"the node did not run", kNode};
  at::AutoGradMode grad_mode(!kWrt.empty());
  for (int i = 0; i < static_cast<int>(nodes.size()) && i <= kNode; ++i) {
    const Node& node = nodes[i];
    std::optional<Failure> failure = InheritedFailure(node, failed);
    if (!failure && i == kNode && reference != nullptr && (target == "cpu" || cuda)) {
      *reference = kGradient ? WholeF64() : ReferenceOf(node, i, env);
    }
    if (!failure) {
      try {
        torch::jit::Stack stack = IsGrad(node) ? CallGrad(node, lookup, LaterGrad(nodes, i))
                                               : CallChecked(node, i, cuda, &env, lookup);
        if (cuda && IsGrad(node)) at::detail::getCUDAHooks().deviceSynchronize(0);
        for (size_t k = 0; k < stack.size(); ++k) {
          if (stack[k].isTensor()) env[node.results[k]] = stack[k].toTensor();
        }
        if (i == kNode) {
          result.values = Capture(stack);
          result.failure.reset();
        }
      } catch (const std::exception& e) {
        failure = Failure{FirstLine(e.what()), i};
      }
    }
    if (failure) {
      for (const std::string& r : node.results) failed[r] = *failure;
      if (i == kNode) result.failure = failure;
    }
  }
  return result;
}

// ==== Step 3: the oracle's rules for one output ==============================

struct Tol {
  double rtol, atol;
};

Tol Tolerance(at::ScalarType t) {  // the policy's (kTolerances); integers are exact
  for (const DTypeTolerance& d : kTolerances) {
    if (d.dtype == t) return {d.rtol, d.atol};
  }
  return {0, 0};
}

// Real view in float64: complex tensors as (re, im) pairs.
std::vector<double> Parts(const at::Tensor& t) {
  at::Tensor d = at::isComplexType(t.scalar_type())
                     ? at::view_as_real(t.resolve_conj().to(at::kComplexDouble))
                     : t.to(at::kDouble);
  d = d.contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

int ClassOf(double x) { return std::isnan(x) ? 3 : std::isinf(x) ? (x > 0 ? 1 : 2) : 0; }

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

std::string Num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (%a)", x, x);
  return buf;
}

struct Verdict {
  std::string cls;  // empty: no divergence
  std::string detail;
  int64_t flat = -1;  // into the real view
  size_t part = 0;    // which compared tensor (a decomposition's invariant)
};

Verdict CompareOne(const at::Tensor& x, const at::Tensor& y, const std::string& na,
                   const std::string& nb) {
  if (x.defined() != y.defined() ||
      (x.defined() && (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()))) {
    std::ostringstream m;
    m << na << ": " << (x.defined() ? std::string(c10::toString(x.scalar_type())) : "undefined")
      << " " << (x.defined() ? x.sizes() : at::IntArrayRef{}) << ", " << nb << ": "
      << (y.defined() ? std::string(c10::toString(y.scalar_type())) : "undefined") << " "
      << (y.defined() ? y.sizes() : at::IntArrayRef{});
    return {"meta_split", m.str(), -1};
  }
  if (!x.defined() || x.numel() == 0) return {"", "both empty", -1};
  const bool complex = at::isComplexType(x.scalar_type());
  const size_t per = complex ? 2 : 1;
  if (at::isFloatingType(x.scalar_type()) || complex) {
    const std::vector<double> pa = Parts(x), pb = Parts(y);
    for (size_t i = 0; i < pa.size(); ++i) {
      if (ClassOf(pa[i]) != ClassOf(pb[i])) {
        return {"class_split",
                "element " + std::to_string(i / per) + ": " + na + " " + Num(pa[i]) + ", " + nb +
                    " " + Num(pb[i]),
                static_cast<int64_t>(i)};
      }
    }
    const Tol tol = Tolerance(x.scalar_type());
    double worst = 0;
    for (size_t i = 0; i < pa.size(); ++i) {
      if (ClassOf(pa[i]) != 0) continue;
      const double err = std::fabs(pa[i] - pb[i]);
      const double allowed = tol.atol + tol.rtol * std::fabs(pb[i]);
      worst = std::max(worst, err);
      if (err > allowed) {
        std::ostringstream m;
        m << "element " << i / per << ": " << na << " " << Num(pa[i]) << ", " << nb << " "
          << Num(pb[i]) << ", |a-b| = " << err << " > " << allowed << " = atol " << tol.atol
          << " + rtol " << tol.rtol << " * |b|";
        return {"tolerance", m.str(), static_cast<int64_t>(i)};
      }
    }
    std::ostringstream m;
    m << "equal within rtol " << tol.rtol << ", atol " << tol.atol << " (max |a-b| = " << worst
      << ")";
    return {"", m.str(), -1};
  }
  const at::Tensor ia = x.to(at::kLong).contiguous().reshape({-1});
  const at::Tensor ib = y.to(at::kLong).contiguous().reshape({-1});
  for (int64_t i = 0; i < ia.numel(); ++i) {
    const int64_t u = ia.data_ptr<int64_t>()[i], w = ib.data_ptr<int64_t>()[i];
    if (u != w) {
      return {"exact_mismatch",
              "element " + std::to_string(i) + ": " + na + " " + std::to_string(u) + ", " + nb +
                  " " + std::to_string(w),
              i};
    }
  }
  return {"", "exactly equal", -1};
}

// The oracle's rules over what is compared (Comparable).
Verdict Compare(const Result& a, const Result& b, const std::string& na, const std::string& nb) {
  if (a.failure && b.failure) return {"", "both targets raised", -1};
  if (a.failure || b.failure) {
    const std::string& side = a.failure ? na : nb;
    const std::string& msg = a.failure ? a.failure->message : b.failure->message;
    bool gap = false;
    for (const std::string& g : kDtypeGaps) gap = gap || msg.find(g) != std::string::npos;
    return {gap ? "dtype_gap" : "error_split", "only " + side + " raised: " + msg, -1};
  }
  if (a.values.size() != b.values.size()) return {"meta_split", "different numbers of outputs", -1};
  Verdict last{"", "no output", -1};
  for (size_t k = 0; k < a.values.size(); ++k) {
    Verdict v = CompareOne(a.values[k], b.values[k], na, nb);
    v.part = k;
    if (!v.cls.empty()) {
      if (*kInvariants != '\0') {
        v.detail = "invariant " + std::to_string(k) + " of the decomposition: " + v.detail;
      }
      return v;
    }
    last = v;
  }
  return last;
}

// The sides that miss divfuzz's exact value at kExactElement (within the
// same tolerance), printed one a line.
std::vector<std::string> CheckExact(const std::vector<std::string>& targets,
                                    std::map<std::string, Result>& results) {
  std::cout << "  the exact value at element " << kExactElement
            << " (divfuzz's MPFR or exact rationals, from each side's own inputs, rounded "
               "once), which decides:\n";
  std::vector<std::string> blamed;
  for (const std::string& t : targets) {
    auto want = kExact.find(t);
    const Result& r = results[t];
    if (want == kExact.end() || r.failure || r.values.empty() || !r.values[0].defined() ||
        !at::isFloatingType(r.values[0].scalar_type()) || kExactElement >= r.values[0].numel()) {
      continue;
    }
    const at::Tensor x = r.values[0].reshape({-1}).narrow(0, kExactElement, 1);
    const at::Tensor w =
        at::full({1}, want->second, at::TensorOptions().dtype(at::kDouble)).to(x.scalar_type());
    const Verdict own = CompareOne(x, w, t, "exact");
    std::cout << "    " << t << " gives " << Num(x.to(at::kDouble).item<double>())
              << ", the exact value is " << Num(w.to(at::kDouble).item<double>()) << ": "
              << (own.cls.empty() ? "matches" : "misses (" + own.cls + ")") << "\n";
    if (!own.cls.empty()) blamed.push_back(t);
  }
  return blamed;
}

const FloatBits* BitsOf(at::ScalarType t) {
  for (const FloatBits& b : kFloatBits) {
    if (b.dtype == t) return &b;
  }
  return nullptr;
}

// |value - reference| in units in the last place of the dtype at the reference.
double Ulps(double value, double reference, at::ScalarType t) {
  const FloatBits* bits = BitsOf(t);
  if (bits == nullptr || !std::isfinite(value) || !std::isfinite(reference)) return NAN;
  const double tiny = std::ldexp(1.0, bits->tiny_exponent);
  const double spacing =
      reference == 0 ? tiny
                     : std::max(std::ldexp(1.0, std::ilogb(reference) - bits->mantissa), tiny);
  return std::fabs(value - reference) / spacing;
}

std::string Exact(const at::Tensor& t, int64_t limit = kExactLimit);

std::string ExactAll(const std::vector<at::Tensor>& values) {
  std::string out;
  for (size_t k = 0; k < values.size(); ++k) {
    out += (k ? " | " : "") + (values[k].defined() ? Exact(values[k]) : std::string("undefined"));
  }
  return out;
}

std::string Exact(const at::Tensor& t, int64_t limit) {
  std::string out;
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) {
    const std::vector<double> p = Parts(t);
    const size_t per = at::isComplexType(t.scalar_type()) ? 2 : 1;
    for (size_t i = 0; i < p.size() && i < static_cast<size_t>(limit) * per; ++i) {
      out += (i ? " " : "") + Hex(p[i]);
    }
  } else {
    const at::Tensor l = t.to(at::kLong).contiguous().reshape({-1});
    for (int64_t i = 0; i < l.numel() && i < limit; ++i) {
      out += (i ? " " : "") + std::to_string(l.data_ptr<int64_t>()[i]);
    }
  }
  if (t.numel() > limit) out += " ...";
  return out;
}

void Show(const std::string& name, const Result& r) {
  if (r.failure) {
    std::cout << name << ": raised at node " << r.failure->node << ": " << r.failure->message
              << "\n";
    return;
  }
  for (size_t k = 0; k < r.values.size(); ++k) {
    const at::Tensor& t = r.values[k];
    std::cout << name << (r.values.size() > 1 ? " invariant " + std::to_string(k) : "");
    if (!t.defined()) {
      std::cout << ": undefined\n";
      continue;
    }
    std::cout << ": dtype " << c10::toString(t.scalar_type()) << ", shape " << t.sizes() << "\n"
              << t << "\n  exact: " << Exact(t) << "\n";
  }
}

// ==== The environment the repro prints ======================================

std::string FileValue(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
    return v;
  }
  return "?";
}

std::string Loaded(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.rfind('/');
    if (slash != std::string::npos && line.compare(slash + 1, prefix.size(), prefix) == 0) {
      return line.substr(line.find('/'));
    }
  }
  return "";
}

std::string Sibling(const std::string& loaded, const std::string& prefix) {
  const size_t slash = loaded.rfind('/');
  if (slash == std::string::npos) return "";
  DIR* d = opendir(loaded.substr(0, slash).c_str());
  if (d == nullptr) return "";
  std::string found;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) {
      found = loaded.substr(0, slash + 1) + e->d_name;
      break;
    }
  }
  closedir(d);
  return found;
}

std::string LibraryVersion(const std::string& path, const char* symbol) {
  if (path.empty()) return "?";
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "?";
  auto fn = reinterpret_cast<int (*)(int, int*)>(dlsym(h, symbol));
  int v[3] = {0, 0, 0};
  std::string out = "?";
  if (fn != nullptr && fn(0, &v[0]) == 0 && fn(1, &v[1]) == 0 && fn(2, &v[2]) == 0) {
    out = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
  }
  dlclose(h);
  return out;
}

std::string GpuName() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "?";
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto get = reinterpret_cast<int (*)(int*, int)>(dlsym(h, "cuDeviceGet"));
  auto name = reinterpret_cast<int (*)(char*, int, int)>(dlsym(h, "cuDeviceGetName"));
  auto attr = reinterpret_cast<int (*)(int*, int, int)>(dlsym(h, "cuDeviceGetAttribute"));
  int dev = 0, major = 0, minor = 0;
  char buf[256] = {0};
  if (init == nullptr || get == nullptr || name == nullptr || init(0) != 0 || get(&dev, 0) != 0 ||
      name(buf, sizeof buf - 1, dev) != 0) {
    return "?";
  }
  std::string out = buf;
  if (attr != nullptr && attr(&major, 75, dev) == 0 && attr(&minor, 76, dev) == 0) {
    out += " (sm_" + std::to_string(major) + std::to_string(minor) + ")";
  }
  return out;
}

void PrintEnvironment() {
  const char* forced = std::getenv("ATEN_CPU_CAPABILITY");
  std::cout << "torch " << TORCH_VERSION << " (libtorch), ATen CPU capability "
            << at::get_cpu_capability()
            << (forced != nullptr ? std::string(" (ATEN_CPU_CAPABILITY=") + forced + ")" : "")
            << ", " << at::get_num_threads() << " threads\n";
  std::cout << "CPU: " << FileValue("/proc/cpuinfo", "model name", ':') << " ("
            << sysconf(_SC_NPROCESSORS_ONLN)
            << " cores), OS: " << FileValue("/etc/os-release", "PRETTY_NAME", '=') << "\n";
  if (at::hasCUDA()) {
    const long rt = at::detail::getCUDAHooks().versionCUDART();
    const std::string cublas = Loaded("libcublas.so");
    std::string cusolver = Loaded("libcusolver.so");
    if (cusolver.empty()) cusolver = Sibling(cublas, "libcusolver.so");
    std::cout << "CUDA runtime " << rt / 1000 << "." << (rt % 1000) / 10 << ", GPU: " << GpuName()
              << ", driver " << FileValue("/sys/module/nvidia/version", "", '\n') << ", cuBLAS "
              << LibraryVersion(cublas, "cublasGetProperty") << ", cuSOLVER "
              << LibraryVersion(cusolver, "cusolverGetProperty") << "\n";
  } else {
    std::cout << "CUDA: not available\n";
  }
}

// ==== Nondeterminism: one target against itself (kRerun) ====================

// "" when two runs agree bit for bit (a NaN matches any NaN in the same place;
// -0.0 and 0.0 differ), else the first element that differs, exactly.
std::string BitDifference(const at::Tensor& x, const at::Tensor& y) {
  if (x.defined() != y.defined()) return "one run has no tensor";
  if (!x.defined()) return "";
  if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) {
    std::ostringstream m;
    m << "dtype/shape: " << c10::toString(x.scalar_type()) << " " << x.sizes() << " vs "
      << c10::toString(y.scalar_type()) << " " << y.sizes();
    return m.str();
  }
  const bool complex = at::isComplexType(x.scalar_type());
  auto flat = [complex](const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    if (complex) c = at::view_as_real(c.resolve_conj());
    return c.contiguous().reshape({-1});
  };
  const at::Tensor a = flat(x), b = flat(y);
  at::Tensor differ;
  const bool floating = at::isFloatingType(a.scalar_type());
  const at::ScalarType bits = a.element_size() == 2   ? at::kShort
                              : a.element_size() == 4 ? at::kInt
                                                      : at::kLong;
  if (floating) {
    differ = a.view(bits).ne(b.view(bits)).logical_and(a.isnan().logical_and(b.isnan()).logical_not());
  } else {
    differ = a.ne(b);
  }
  const at::Tensor where = differ.nonzero();
  if (where.size(0) == 0) return "";
  const int64_t i = where[0][0].item<int64_t>();
  auto value = [&](const at::Tensor& t) {
    if (!floating) return std::to_string(t[i].to(at::kLong).item<int64_t>());
    char raw[32];
    const uint64_t mask = a.element_size() == 8 ? ~0ull : (1ull << (8 * a.element_size())) - 1;
    std::snprintf(raw, sizeof raw, "%0*" PRIx64, static_cast<int>(2 * a.element_size()),
                  static_cast<uint64_t>(t.slice(0, i, i + 1).view(bits).to(at::kLong).item<int64_t>()) &
                      mask);
    return Num(t[i].item<double>()) + " bits 0x" + raw;
  };
  const std::string part = !complex ? "" : i % 2 ? " (imag)" : " (real)";
  return "element " + std::to_string(complex ? i / 2 : i) + part + ": " + value(a) + " vs " +
         value(b);
}

std::string RunDifference(const Result& x, const Result& y) {
  if (x.failure && y.failure) return "";
  if (x.failure || y.failure) {
    return "one run raises: " + (x.failure ? x.failure->message : y.failure->message);
  }
  if (x.values.size() != y.values.size()) return "different numbers of results";
  for (size_t k = 0; k < x.values.size(); ++k) {
    const std::string d = BitDifference(x.values[k], y.values[k]);
    if (!d.empty()) return x.values.size() > 1 ? "result " + std::to_string(k) + ": " + d : d;
  }
  return "";
}

std::string Shown(const Result& r) {
  return r.failure ? "raised at node " + std::to_string(r.failure->node) + ": " + r.failure->message
                   : ExactAll(r.values);
}

// glibc's M_PERTURB: fresh malloc blocks hold ~byte (0: off). Runs alternate
// 0xff (zeroed) and 0x5a (0xa5 bytes), so a kernel that reads memory it never
// wrote (CPU linalg_lstsq's gelsy pivots, pytorch#187411) differs between runs
// in a fresh process as it did in the fuzzer's; a correct kernel cannot tell.
void MallocPerturb(int byte) {
#if defined(__GLIBC__) && defined(M_PERTURB)
  mallopt(M_PERTURB, byte);
#else
  (void)byte;
#endif
}

// Runs one target on the same inputs up to kRuns times (kRunSeconds at most):
// 1 when a run differs from the first bit for bit (the finding reproduces),
// else 0.
int CheckNondeterminism(const std::string& target, bool cuda) {
  if (target == "cuda" && !cuda) {
    std::cout << "CUDA not available: skipping the nondeterminism check of cuda\n";
    return 0;
  }
  const std::string run_as = target == "cpu-scalar" ? "cpu" : target;
  std::cout << "runs alternate malloc's perturb byte (fresh memory zeroed, then 0xa5"
            << (std::getenv(kMallocCacheOff) ? "; glibc's thread cache off" : "")
            << "): a kernel that reads memory it never wrote differs too\n";
  auto run = [&](int k) {
    MallocPerturb(kPerturbBytes[k % 2 ? 0 : 1]);
    Result r = Run(run_as, nullptr);
    MallocPerturb(0);
    return r;
  };
  const Result first = run(1);
  const auto start = std::chrono::steady_clock::now();
  int k = 1;
  while (k < kRuns && std::chrono::steady_clock::now() - start < std::chrono::seconds(kRunSeconds)) {
    ++k;
    const Result again = run(k);
    const std::string d = RunDifference(first, again);
    if (d.empty()) continue;
    std::cout << target << " run 1: " << Shown(first) << "\n"
              << target << " run " << k << ": " << Shown(again) << "\n"
              << "VERDICT: nondeterminism reproduces (" << target << " run 1 vs run " << k
              << "): " << d << "\n";
    return 1;
  }
  std::cout << "VERDICT: no nondeterminism in " << k << " runs of " << target << "\n";
  return 0;
}

// ==== Steps 2 and 3 over every target =========================================

// Every target's result (CUDA skipped when absent), comparable with the
// others, and each side's float64 reference of the node.
void Collect(const std::vector<std::string>& runs, bool cuda,
             std::map<std::string, Result>* results_out,
             std::map<std::string, std::optional<Result>>* refs_out) {
  std::map<std::string, Result>& results = *results_out;
  std::map<std::string, std::optional<Result>>& refs = *refs_out;
  results.clear();
  refs.clear();
  for (const std::string& t : runs) {
    if (t == "cuda" && !cuda) continue;
    results[t] = Run(t == "cpu-scalar" ? "cpu" : t, &refs[t]);
  }
  // cpu-f64 rounds back to the program's dtype.
  Result& f64 = results["cpu-f64"];
  const Result& plain = results[runs[0]];
  if (!f64.failure && !plain.failure) {
    f64.values = RoundLike(f64.values, plain.values);
  } else if (!f64.failure && kValueDType && f64.values.size() == 1 && f64.values[0].defined()) {
    f64.values[0] = f64.values[0].to(*kValueDType);
  }
  for (auto& [t, r] : results) {
    if (r.failure) continue;
    if (refs[t] && !refs[t]->failure) {
      refs[t]->values = Comparable(RoundLike(refs[t]->values, r.values));
    }
    r.values = Comparable(r.values);
  }
}

void ShowAll(const std::vector<std::string>& runs, std::map<std::string, Result>& results,
             std::map<std::string, std::optional<Result>>& refs) {
  std::cout << "\nOutput %" << kValue << ": result " << kOutput << " of node " << kNode << ", "
            << kOp << "\n";
  for (const std::string& t : runs) {
    if (!results.count(t)) {
      std::cout << t << ": skipped (CUDA not available)\n";
      continue;
    }
    Show(t, results[t]);
    if (refs[t]) {
      std::cout << (kGradient ? std::string("  float64 gradient (the whole program in float64, "
                                            "the same for every side): ")
                              : "  float64 reference from " + t + "'s own inputs: ")
                << (refs[t]->failure ? "raised: " + refs[t]->failure->message
                                     : ExactAll(refs[t]->values))
                << "\n";
    }
  }
  std::cout << "\n";
}

// ==== Hangs and crashes: the target in a child process (kFailure) ============

// What a CUDA fault says (it poisons the process's CUDA context: a crash).
bool CudaFault(const std::string& message) {
  for (const std::string& f : kCudaFaults) {
    if (message.find(f) != std::string::npos) return true;
  }
  return false;
}

// The child's side of CheckFailure: runs the target; exit 3 on a CUDA fault.
int FailureChild(const std::string& target) {
  // Tells the parent its clock can start: libtorch is loaded, the program runs.
  if (const char* marker = std::getenv("DIVFUZZ_REPRO_STARTED")) std::ofstream touch(marker);
  const Result r = Run(target, nullptr);
  std::cout << target << ": " << Shown(r) << "\n" << std::flush;
  return r.failure && CudaFault(r.failure->message) ? 3 : 0;
}

// Runs one target in a child process (this program again): 1 when it hangs
// (still running after kHangSeconds) or crashes (dies by a signal, or a CUDA
// fault), as `kind` says, else 0.
int CheckFailure(const std::string& kind, const std::string& target, bool cuda, char** argv) {
  if (target == "cuda" && !cuda) {
    std::cout << "CUDA not available: skipping the " << kind << " check of cuda\n";
    return 0;
  }
  // A fresh process (this program again): CUDA cannot be used after a fork,
  // and a fault or a hang must not take this one with it. Its environment is
  // built before the fork: only execve runs between fork and exec.
  char marker[] = "/tmp/divfuzz-repro-XXXXXX";
  const int marker_fd = mkstemp(marker);
  if (marker_fd < 0) throw std::runtime_error("cannot make a temporary file");
  close(marker_fd);
  std::remove(marker);
  std::vector<std::string> env = {
      std::string("DIVFUZZ_REPRO_FAILURE_CHILD=") + (target == "cpu-scalar" ? "cpu" : target),
      "CUDA_LAUNCH_BLOCKING=1", std::string("DIVFUZZ_REPRO_STARTED=") + marker};
  if (target == "cpu-scalar") env.push_back("ATEN_CPU_CAPABILITY=default");
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "DIVFUZZ_REPRO_FAILURE_CHILD" && key != "CUDA_LAUNCH_BLOCKING" &&
        key != "ATEN_CPU_CAPABILITY" && key != "DIVFUZZ_REPRO_STARTED") {
      env.push_back(kv);
    }
  }
  std::vector<char*> envp;
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::cout << std::flush;
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork");
  if (pid == 0) {
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  // The clock starts when the child has loaded libtorch and runs the program
  // (it makes the marker file), not at exec.
  auto start = std::chrono::steady_clock::now();
  auto limit = std::chrono::seconds(kHangSeconds + kStartSeconds);
  bool began = false;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (!began && access(marker, F_OK) == 0) {
      began = true;
      start = std::chrono::steady_clock::now();
      limit = std::chrono::seconds(kHangSeconds);
    }
    if (std::chrono::steady_clock::now() - start > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::remove(marker);
      std::cout << target << ": still running after " << kHangSeconds << " s (killed)\n";
      if (kind == "hang") {
        std::cout << "VERDICT: hang reproduces (" << target << ", node " << kNode << ", " << kOp
                  << ")\n";
        return 1;
      }
      std::cout << "VERDICT: no crash (" << target << " hangs instead)\n";
      return 0;
    }
    usleep(static_cast<useconds_t>(kPollSeconds * 1e6));
  }
  std::remove(marker);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    std::cout << target << ": died by signal " << WTERMSIG(status) << " after " << took << " s\n";
    if (kind == "crash") {
      std::cout << "VERDICT: crash reproduces (" << target << ", node " << kNode << ", " << kOp
                << ")\n";
      return 1;
    }
    std::cout << "VERDICT: no hang (" << target << " crashes instead)\n";
    return 0;
  }
  if (kind == "crash" && WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    std::cout << "VERDICT: crash reproduces (" << target << ", node " << kNode << ", " << kOp
              << "): a CUDA fault\n";
    return 1;
  }
  std::cout << target << ": finished in " << took << " s (exit status "
            << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ")\nVERDICT: no " << kind
            << "\n";
  return 0;
}

// ==== Step 1: arguments and reruns ============================================

bool KnownTarget(const std::string& t) {
  for (const std::string& k : kTargets) {
    if (k == t) return true;
  }
  return false;
}

std::string KnownTargets() {
  std::string out;
  for (const std::string& k : kTargets) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// --dump-inputs: every input exactly: hex floats (complex: re, im), integers.
// A layout shows as its name and the strides it gives on the CPU.
int DumpInputs() {
  const std::map<std::string, std::string> layouts = Layouts();
  for (const auto& [name, t] : MakeInputs()) {
    std::cout << name << " " << c10::toString(t.scalar_type()) << " " << t.sizes();
    if (const auto l = layouts.find(name); l != layouts.end()) {
      std::cout << " " << l->second << " strides " << ApplyLayout(t, l->second).strides();
    }
    std::cout << ": " << Exact(t, t.numel()) << "\n";
  }
  return 0;
}

// --backend=SWITCH[+SWITCH] (default kBackend): divfuzz's CUDA switches
// (cuda+magma ...), made on at::globalContext() for this whole process; they
// change only which library CUDA kernels use. Takes the option out of `args`;
// an exit status when a switch is unknown, else nullopt.
std::optional<int> SetBackend(std::vector<char*>* args) {
  std::string backend = kBackend;
  std::vector<char*> rest;
  for (char* a : *args) {
    if (a != nullptr && std::string(a).rfind("--backend=", 0) == 0) {
      backend = std::string(a).substr(10);
    } else {
      rest.push_back(a);
    }
  }
  *args = rest;
  std::string shown;
  size_t start = 0;
  while (start < backend.size()) {
    size_t end = backend.find('+', start);
    if (end == std::string::npos) end = backend.size();
    const std::string name = backend.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    const CudaSwitch* found = nullptr;
    for (const CudaSwitch& s : kSwitches) {
      if (name == s.name) found = &s;
    }
    if (found == nullptr) {
      std::cout << "--backend: unknown CUDA switch " << name << " (known:";
      for (const CudaSwitch& s : kSwitches) std::cout << " " << s.name;
      std::cout << ")\n";
      return 2;
    }
    found->make(at::globalContext());
    shown += (shown.empty() ? "" : ", ") + name + " (" + found->library + ")";
  }
  if (!shown.empty()) std::cout << "CUDA switches: " << shown << "\n";
  return std::nullopt;
}

// TARGET_A TARGET_B from the command line (none: the finding's pair). An exit
// status when they are not usable, else nullopt.
std::optional<int> ParseTargets(int argc, char** argv, std::string* ta, std::string* tb) {
  if (argc == 3) {
    *ta = argv[1];
    *tb = argv[2];
  } else if (argc != 1) {
    std::cout << "usage: " << argv[0]
              << " [TARGET_A TARGET_B | --dump-inputs]  (" << KnownTargets() << ")\n";
    return 2;
  }
  if (!KnownTarget(*ta) || !KnownTarget(*tb)) {
    std::cout << "unknown target (known: " << KnownTargets() << ")\n";
    return 2;
  }
  return std::nullopt;
}

// malloc's perturb byte (CheckNondeterminism) never reaches the blocks
// glibc's thread cache hands back, and glibc 2.38+ serves PyTorch's aligned
// CPU allocations from it too: rerun this program once with the cache off.
// Returns only where it does not rerun (or cannot).
void RerunWithoutMallocCache(char** argv) {
#if defined(__GLIBC__)
  if (*kRerun != '\0' && std::string(kRerun) != "cuda" &&
      std::getenv(kMallocCacheOff) == nullptr) {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const std::string off = std::string(tunables != nullptr && *tunables != '\0'
                                             ? std::string(tunables) + ":"
                                             : "") +
                            kNoMallocCache;
    setenv(kMallocCacheOff, "1", 1);
    setenv("GLIBC_TUNABLES", off.c_str(), 1);
    std::cout.flush();
    execv("/proc/self/exe", argv);
    std::cout << "cannot rerun with " << kNoMallocCache << ": perturbing less memory\n";
  }
#else
  (void)argv;
#endif
}

// ATen picks its kernels at start-up: with cpu-scalar, rerun this program
// with the scalar ones. An exit status where that cannot be, else nullopt.
std::optional<int> RerunWithScalarKernels(const std::string& ta, const std::string& tb,
                                          char** argv) {
  if (ta != "cpu-scalar" && tb != "cpu-scalar") return std::nullopt;
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
  if (cap == nullptr || std::string(cap) != "default") {
    setenv("ATEN_CPU_CAPABILITY", "default", 1);
    execv("/proc/self/exe", argv);
    std::cout << "cannot rerun with ATEN_CPU_CAPABILITY=default\n";
    return 2;
  }
  if (ta == "cpu" || tb == "cpu") {
    std::cout << "cpu-scalar replaces cpu's kernels in this process: compare it with cpu-f64 "
                 "or cuda\n";
    return 2;
  }
  return std::nullopt;
}

// CPU, CUDA and the float64 reference always (CUDA skipped when absent),
// and whatever else the two targets name; cpu-scalar stands in for cpu.
std::vector<std::string> TargetsToRun(const std::string& ta, const std::string& tb) {
  const bool scalar = ta == "cpu-scalar" || tb == "cpu-scalar";
  std::vector<std::string> runs;
  for (const std::string& t : {std::string(scalar ? "cpu-scalar" : "cpu"), std::string("cuda"),
                               std::string("cpu-f64"), ta, tb}) {
    bool seen = false;
    for (const std::string& r : runs) seen = seen || r == t;
    if (!seen) runs.push_back(t);
  }
  return runs;
}

// ==== Step 4: the verdict and who is wrong ====================================

// The two targets compared; a divergence at a racing kernel is tried up to
// kAttempts times, each a fresh run of every target. `attempts` receives the
// number of the last attempt.
Verdict CompareWithAttempts(const std::string& ta, const std::string& tb,
                            const std::vector<std::string>& runs, bool cuda,
                            std::map<std::string, Result>* results,
                            std::map<std::string, std::optional<Result>>* refs, int* attempts) {
  Verdict v = Compare((*results)[ta], (*results)[tb], ta, tb);
  int attempt = 1;
  while (v.cls.empty() && attempt < kAttempts) {
    ++attempt;
    Collect(runs, cuda, results, refs);
    v = Compare((*results)[ta], (*results)[tb], ta, tb);
  }
  *attempts = attempt;
  return v;
}

// Whether side `t` misses the float64 reference computed from its own inputs
// (`ref`), and why, with the error in ULPs at the element that diverged (`v`).
std::pair<bool, std::string> JudgeAgainstReference(const std::string& t, const Result& r,
                                                   const Result& ref, const Verdict& v) {
  bool miss = false;
  std::string why;
  if (ref.failure) {
    miss = !r.failure;
    why = miss ? "the float64 reference raises (" + ref.failure->message + ") but " + t +
                     " returns values"
               : t + " raises, and so does the float64 reference";
  } else if (r.failure) {
    miss = true;
    why = t + " raises (" + r.failure->message + ") where the float64 reference computes a value";
  } else {
    const Verdict own = Compare(r, ref, t, "reference");
    miss = !own.cls.empty();
    const std::string what = kGradient ? "the float64 gradient of the whole program"
                                       : "the float64 reference computed from its own inputs";
    why = miss ? t + " misses " + what + ": " + own.cls + ": " + own.detail
               : t + " matches " + what;
    const at::Tensor rv = v.part < r.values.size() ? r.values[v.part] : at::Tensor();
    const at::Tensor fv = v.part < ref.values.size() ? ref.values[v.part] : at::Tensor();
    if (v.flat >= 0 && rv.defined() && fv.defined() &&
        (at::isFloatingType(rv.scalar_type()) || at::isComplexType(rv.scalar_type()))) {
      const std::vector<double> pv = Parts(rv), pr = Parts(fv);
      if (static_cast<size_t>(v.flat) < pv.size() && static_cast<size_t>(v.flat) < pr.size()) {
        const double u = Ulps(pv[v.flat], pr[v.flat], rv.scalar_type());
        std::ostringstream m;
        m << "\n    at that element: " << t << " " << Num(pv[v.flat]) << ", float64 reference "
          << Num(pr[v.flat]);
        if (!std::isnan(u)) m << ", error " << u << " ULPs";
        why += m.str();
      }
    }
  }
  return {miss, why};
}

// Steps 3 and 4 over the results Collect made: 1 when ta and tb diverge
// (then VERDICT and WRONG SIDE), else 0.
int CheckDivergence(const std::string& ta, const std::string& tb,
                    const std::vector<std::string>& runs, bool cuda,
                    std::map<std::string, Result>& results,
                    std::map<std::string, std::optional<Result>>& refs) {
  int attempt = 1;
  const Verdict v = CompareWithAttempts(ta, tb, runs, cuda, &results, &refs, &attempt);
  if (v.cls.empty()) {
    std::cout << "VERDICT: no divergence (" << ta << " vs " << tb
              << (attempt == 1 ? std::string() : ", " + std::to_string(attempt) + " attempts")
              << "): " << v.detail << "\n";
    return 0;
  }
  if (attempt > 1) {
    std::cout << "The results vary from run to run: " << ta << " and " << tb
              << " diverge on attempt " << attempt << " of " << kAttempts << ":\n";
    ShowAll(runs, results, refs);
  }
  std::cout << "VERDICT: divergence reproduces (" << ta << " vs " << tb << "): " << v.cls << ": "
            << v.detail << "\n";
  // Who is wrong: each side against the float64 reference of the node
  // computed from its own inputs (cpu-f64 is the reference itself).
  std::vector<std::string> blamed;
  for (const std::string& t : {ta, tb}) {
    if (t == "cpu-f64") {
      std::cout << "  " << t << ": the reference itself\n";
      continue;
    }
    const std::optional<Result>& ref = refs[t];
    if (!ref) continue;
    const auto [miss, why] = JudgeAgainstReference(t, results[t], *ref, v);
    std::cout << "  " << why << "\n";
    if (miss) blamed.push_back(t);
  }
  // The float64 run shares the kernels' algorithms; divfuzz's exact value
  // does not, and it is what divfuzz judged by.
  if (!kExact.empty()) blamed = CheckExact({ta, tb}, results);
  const std::string side = blamed.size() == 2   ? (v.cls == "tolerance" ? "undecided" : "both")
                           : blamed.size() == 1 ? blamed[0]
                                                : "undecided";
  std::cout << "WRONG SIDE: " << side << "\n";
  return 1;
}

// The steps in order (the outline at the top of the harness).
int Main(int argc, char** argv) {
  // The switches first: a failure child (re-executed with the same argv) makes them too.
  std::vector<char*> args(argv, argv + argc);
  if (const std::optional<int> status = SetBackend(&args)) return *status;
  const int nargs = static_cast<int>(args.size());
  args.push_back(nullptr);
  if (const char* child = std::getenv("DIVFUZZ_REPRO_FAILURE_CHILD")) return FailureChild(child);
  if (nargs == 2 && std::string(args[1]) == "--dump-inputs") return DumpInputs();
  // Step 1: arguments and reruns.
  std::string ta = kTargetA, tb = kTargetB;
  if (const std::optional<int> status = ParseTargets(nargs, args.data(), &ta, &tb)) return *status;
  RerunWithoutMallocCache(argv);
  if (const std::optional<int> status = RerunWithScalarKernels(ta, tb, argv)) return *status;
  std::cout << "divfuzz repro: " << kTitle << "\n";
  if (*kSeen != '\0') std::cout << "divfuzz saw: " << kSeen << "\n";
  if (*kBackward != '\0') std::cout << "backward kernel: " << kBackward << "\n";
  PrintEnvironment();
  const bool cuda = at::hasCUDA();
  // Running the program here would hang or kill this process.
  if (*kFailure != '\0') return CheckFailure(kFailure, kFailureTarget, cuda, argv);
  // Step 2: every target's run.
  const std::vector<std::string> runs = TargetsToRun(ta, tb);
  std::map<std::string, Result> results;
  std::map<std::string, std::optional<Result>> refs;
  Collect(runs, cuda, &results, &refs);
  ShowAll(runs, results, refs);
  if (*kRerun != '\0') return CheckNondeterminism(kRerun, cuda);
  if ((ta == "cuda" || tb == "cuda") && !cuda) {
    std::cout << "CUDA not available: skipping the verdict (compare other targets: " << argv[0]
              << " cpu cpu-f64)\n";
    return 0;
  }
  // Steps 3 and 4.
  return CheckDivergence(ta, tb, runs, cuda, results, refs);
}
// divfuzz-harness begin program
// A stand-in program that uses every builder, so the compiler checks them all.
std::map<std::string, at::Tensor> MakeInputs() {
  std::map<std::string, at::Tensor> v;
  v["a"] = Values({1.0, kNaN}, {2}, at::kFloat);
  v["b"] = Fill(kInf, {2}, at::kFloat);
  v["c"] = ComplexValues({1.0, 2.0}, {1}, at::kComplexFloat);
  v["d"] = ComplexFill(0.0, 1.0, {1}, at::kComplexFloat);
  return v;
}

std::map<std::string, std::string> Layouts() { return {{"a", "strided"}}; }

std::vector<Node> Program() {
  return {
      {{"out"}, "aten::add", "Tensor", {{"", V("a")}, {"", V("b")}, {"alpha", I(1LL)}}},
      {{"none"},
       "aten::none",
       "",
       {{"", L({B(true), N()})}, {"", D(0.5)}, {"", S("x")}, {"", T(at::kFloat)}}},
  };
}
// divfuzz-harness end program

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cout << "repro failed: " << FirstLine(e.what()) << "\n";
    return 2;
  }
}
