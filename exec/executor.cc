#include "exec/executor.h"

#include <ATen/Context.h>
#include <deque>
#include <mutex>
#include <ATen/SequenceNumber.h>
#include <ATen/Version.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <c10/util/Backtrace.h>
#include <c10/util/Lazy.h>
#include <c10/util/Logging.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/forward_grad.h>
#include <ATen/ops/_make_dual.h>
#include <ATen/ops/_unpack_dual.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/ops/isfinite.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "exec/cuda_variant_guard.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "exec/arguments.h"
#include "exec/backward_probe.h"
#include "exec/dtype_convert.h"
#include "exec/generic_ops.h"
#include "exec/index_precheck.h"
#include "exec/scalar_helper.h"
#include "graph/gradient.h"
#include "graph/materialize.h"
#include "ops/catalogue.h"
#include "ops/kernel_classes.h"

namespace divfuzz::exec {

// The last two: an MPS client cut off from its server (cudaErrorMpsClientTerminated,
// cudaErrorMpsRpcFailure and kin) can run nothing more either.
// "busy or unavailable" (cudaErrorDevicesUnavailable): the device refused
// this process a context, as while an MPS server restarts; session 51's
// 005c657c was filed as an error split of building the inputs (judged infra).
const char* const kCudaFaultMessages[8] = {"illegal memory access", "device-side assert",
                                           "unspecified launch failure", "misaligned address",
                                           "illegal instruction", "MPS client", "MPS server",
                                           "busy or unavailable"};
const char kNotImplementedMessage[] = "not implemented for";
// cuDNN's names no kernel but the dtype (integer convolutions on CUDA).
// Autograd's "the derivative for 'X' is not implemented" is a derivative one
// device's kernel lacks (the CPU flash attention's double backward, session
// 40's G5: three error splits left undecided): a one-sided gap like a dtype's.
const char* const kDtypeGapMessages[6] = {kNotImplementedMessage, "HalfTensor is not supported",
                                          "BFloat16Tensor is not supported",
                                          "getCudnnDataTypeFromScalarType() not supported for",
                                          "No available kernel", "derivative for"};

bool SaysDtypeGap(absl::string_view message) {
  for (const char* m : kDtypeGapMessages) {
    if (absl::StrContains(message, m)) return true;
  }
  return false;
}

namespace {

using graph::DType;

// Any binary that executes programs can also type and generate generic ops.
const bool kGenericOpsInstalled = (InstallGenericOps(), true);

// c10 captures a C++ backtrace for every error an op raises and symbolizes it
// (backtrace_symbols, then dladdr per frame) when what() is read: a third of a
// CPU worker's time went there (divfuzz bench under perf), for text that
// Classify drops (it keeps the message's first line).
const bool kBacktracesOff = (c10::SetStackTraceFetcher([] {
                               return c10::Backtrace(
                                   std::make_shared<c10::PrecomputedLazyValue<std::string>>(
                                       std::string()));
                             }),
                             true);

bool IsCudaFatal(absl::string_view msg) {
  for (const char* fault : kCudaFaultMessages) {
    if (absl::StrContains(msg, fault)) return true;
  }
  return false;
}

NodeError Classify(std::string message) {
  NodeError e;
  // Keep the first line: c10 appends a C++ backtrace that differs by build.
  if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
  if (IsCudaFatal(message)) {
    e.kind = NodeError::Kind::kCudaFatal;
  } else if (SaysDtypeGap(message)) {
    e.kind = NodeError::Kind::kNotImplemented;
  }
  e.message = std::move(message);
  return e;
}

// Classify, and cuDNN's engine search failing on a node whose tensor
// inputs are all integers: CUDA has no integer convolution (OpInfo lists
// none), and cuDNN 9 says so as "GET was unable to find an engine" instead
// of naming the dtype (session 34: integer conv error splits left
// undecided). For floating inputs the same message can be a real bug
// (pytorch#103665), so it stays a raise there.
}  // namespace

NodeError ClassifyAt(const graph::Node& node, const ops::TypeEnv& types, std::string message) {
  NodeError e = Classify(std::move(message));
  if (e.kind != NodeError::Kind::kRaised) return e;
  // A normalization with half or bfloat16 input and float32 parameters: the
  // CPU's mixed-dtype path runs it, CUDA's kernel asks for one dtype
  // ("expected scalar type BFloat16 but found Float"; pytorch PR #188503
  // calls that intended). A capability one device has, like a dtype's kernel
  // (sessions 40 and 46: layer_norm bf16 error splits, judged expected).
  if (absl::StrContains(e.message, "expected scalar type")) {
    const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
    bool half = false, f32 = false;
    for (const std::string& name : node.Uses()) {
      auto it = types.find(name);
      if (it == types.end()) continue;
      half = half || it->second.dtype == graph::DType::kF16 || it->second.dtype == graph::DType::kBF16;
      f32 = f32 || it->second.dtype == graph::DType::kF32;
    }
    if (spec != nullptr && (spec->hints & ops::kNormalizes) && half && f32) {
      e.kind = NodeError::Kind::kNotImplemented;
    }
    return e;
  }
  if (!absl::StrContains(e.message, "was unable to find an engine")) return e;
  bool any = false, integers = true;
  for (const std::string& name : node.Uses()) {
    auto it = types.find(name);
    if (it == types.end()) continue;
    any = true;
    integers = integers && !graph::IsFloating(it->second.dtype) && !graph::IsComplex(it->second.dtype);
  }
  if (any && integers) e.kind = NodeError::Kind::kNotImplemented;
  return e;
}

namespace {

at::Tensor MakeInput(const graph::Input& in) {
  std::vector<double> v = graph::MaterializePayload(in);
  const int64_t numel = in.type.Numel();
  at::Tensor t;
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  if (graph::IsComplex(in.type.dtype)) {
    t = at::view_as_complex(at::from_blob(v.data(), {numel, 2}, f64).clone());
  } else {
    t = at::from_blob(v.data(), {numel}, f64).clone();
  }
  // Built in float64 and cast, a NaN keeping its sign and payload (torch's
  // bfloat16 cast would not).
  return ToDTypeKeepingNaNs(t, ToScalarType(in.type.dtype)).reshape(in.type.shape).contiguous();
}

// The reference's upcast: float to float64, complex to complex128.
at::Tensor Upcast(const at::Tensor& t) {
  if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble);
  if (at::isFloatingType(t.scalar_type())) return t.to(at::kDouble);
  return t;
}

std::string InputWrittenMessage(const std::string& name) {
  return absl::StrCat(kInputWritten, " %", name, ", which its schema does not declare mutable");
}

// Same shape, dtype and bits (a NaN matches only the same NaN).
bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  at::Tensor x = a.resolve_conj().resolve_neg(), y = b.resolve_conj().resolve_neg();
  if (x.is_complex()) x = at::view_as_real(x), y = at::view_as_real(y);
  const at::ScalarType bits = x.element_size() == 2   ? at::kShort
                              : x.element_size() == 4 ? at::kInt
                                                      : at::kLong;
  return at::equal(x.contiguous().view(bits), y.contiguous().view(bits));
}

// A node's output copied to the host. `deferred`: the copy is only queued
// on the device's stream (into pinned memory) and must not be read before
// the program's one synchronization (FinishOutputs); made contiguous there.
at::Tensor Snapshot(const c10::IValue& v, bool deferred = false) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return t;
    at::Tensor host = t.detach().to(at::TensorOptions().device(at::kCPU),
                                    /*non_blocking=*/deferred && t.is_cuda(), /*copy=*/true);
    return deferred ? host : host.contiguous();
  }
  if (v.isScalar()) return at::scalar_tensor(v.toScalar(), at::TensorOptions().dtype(at::kDouble));
  return at::Tensor();
}

}  // namespace

// Parameters whose integer tensors name positions, classes or lengths, not
// values: never upcast (gather/scatter/index_select's index, embedding's
// indices, a loss's class target, ctc_loss's lengths, embedding_bag's offsets).
static bool IndexLikeParameter(const std::string& name) {
  static const std::set<std::string>* const kNames = new std::set<std::string>{
      "index",   "indices",        "target",         "targets",      "offsets",
      "lengths", "input_lengths",  "target_lengths", "batch_sizes",  "counts",
      "repeats", "dim",            "boundaries",     "sorted_sequence", "mask",
      "labels",  "output_size",    "size",           "crow_indices", "col_indices"};
  return kNames->count(name) > 0;
}

std::set<std::string> IntegerValuesUpcast(const graph::Node& node, const ops::TypeEnv& types) {
  std::set<std::string> out;
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  auto result = node.results.empty() ? types.end() : types.find(node.results[0]);
  if (spec == nullptr || result == types.end() || !graph::IsFloating(result->second.dtype) ||
      spec->rule == ops::Rule::kCast || spec->rule == ops::Rule::kCompare ||
      (spec->hints & ops::kIndicesOutput) ||
      !(spec->rule == ops::Rule::kUnary || spec->rule == ops::Rule::kBinary ||
        spec->rule == ops::Rule::kUnaryScalar || (spec->hints & ops::kPointwise))) {
    return out;
  }
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) return out;
  const auto& params = handle->schema().arguments();
  // Bind the node's arguments to the schema's parameters as BuildStack does.
  size_t next_positional = 0;
  for (const graph::Argument& a : node.args) {
    size_t i = params.size();
    if (a.name.empty()) {
      i = next_positional++;
    } else {
      for (size_t k = 0; k < params.size(); ++k) {
        if (params[k].name() == a.name) i = k;
      }
    }
    if (i >= params.size()) continue;
    // A dtype= argument fixes the computation's dtype: nothing to upcast.
    if (params[i].name() == "dtype" && a.value.kind != graph::Literal::Kind::kNone) return {};
    if (IndexLikeParameter(params[i].name())) continue;
    auto add = [&](const graph::Literal& l) {
      if (l.kind != graph::Literal::Kind::kValue) return;
      auto it = types.find(l.s);
      if (it != types.end() && graph::IsIntegral(it->second.dtype)) out.insert(l.s);
    };
    add(a.value);
    for (const graph::Literal& item : a.value.list) add(item);
  }
  // A value also bound to an index-like parameter stays as it is.
  next_positional = 0;
  for (const graph::Argument& a : node.args) {
    size_t i = params.size();
    if (a.name.empty()) {
      i = next_positional++;
    } else {
      for (size_t k = 0; k < params.size(); ++k) {
        if (params[k].name() == a.name) i = k;
      }
    }
    if (i >= params.size() || !IndexLikeParameter(params[i].name())) continue;
    if (a.value.kind == graph::Literal::Kind::kValue) out.erase(a.value.s);
    for (const graph::Literal& item : a.value.list) {
      if (item.kind == graph::Literal::Kind::kValue) out.erase(item.s);
    }
  }
  return out;
}

std::string CpuCapability() {
  std::string c = at::get_cpu_capability();  // "DEFAULT", "AVX2", "AVX512"
  for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return c;
}

bool CudaAvailable() {
  static const bool available = [] {
    try {
      return torch::cuda::is_available();
    } catch (...) {
      return false;
    }
  }();
  return available;
}

int CudaDeviceCount() {
  if (!CudaAvailable()) return 0;
  try {
    return static_cast<int>(torch::cuda::device_count());
  } catch (...) {
    return 0;
  }
}

absl::string_view ErrorKindName(NodeError::Kind kind) {
  switch (kind) {
    case NodeError::Kind::kRaised:
      return "raised";
    case NodeError::Kind::kNotImplemented:
      return "not_implemented";
    case NodeError::Kind::kSkipped:
      return "skipped";
    case NodeError::Kind::kBadArguments:
      return "bad_arguments";
    case NodeError::Kind::kCudaFatal:
      return "cuda_fatal";
  }
  return "?";
}

namespace {

struct VjpEntry {
  graph::Node inner;
  std::vector<std::string> incoming, wrt;
};

// The steps MakeVjpNode made in this process, by the index in their
// overload: a node carries names, and the step needs its forward node whole.
std::deque<VjpEntry>& VjpRegistry() {
  static std::deque<VjpEntry> entries;  // stable references as it grows
  return entries;
}
std::mutex& VjpRegistryMutex() {
  static std::mutex m;
  return m;
}

const VjpEntry* FindVjp(const graph::Node& node) {
  if (node.op != kVjpOp) return nullptr;
  size_t i = 0;
  if (!absl::SimpleAtoi(node.overload, &i)) return nullptr;
  std::lock_guard<std::mutex> lock(VjpRegistryMutex());
  return i < VjpRegistry().size() ? &VjpRegistry()[i] : nullptr;
}

}  // namespace

graph::Node MakeVjpNode(const graph::Node& inner, const std::vector<std::string>& incoming,
                        const std::vector<std::string>& wrt,
                        const std::vector<std::string>& results) {
  graph::Node n;
  n.op = kVjpOp;
  n.args = inner.args;
  std::vector<graph::Literal> items;
  for (const std::string& v : incoming) {
    if (!v.empty()) items.push_back(graph::Literal::Value(v));
  }
  n.args.push_back(graph::Argument{"grad_outputs", graph::Literal::List(std::move(items))});
  n.results = results;
  std::lock_guard<std::mutex> lock(VjpRegistryMutex());
  // The same step again (a walk per finding) reuses its entry.
  std::deque<VjpEntry>& entries = VjpRegistry();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].inner == inner && entries[i].incoming == incoming && entries[i].wrt == wrt) {
      n.overload = std::to_string(i);
      return n;
    }
  }
  entries.push_back(VjpEntry{inner, incoming, wrt});
  n.overload = std::to_string(entries.size() - 1);
  return n;
}

const graph::Node* VjpInner(const graph::Node& node) {
  const VjpEntry* e = FindVjp(node);
  return e == nullptr ? nullptr : &e->inner;
}

std::optional<std::vector<int64_t>> RunStrides(const at::Tensor& t) {
  if (!t.defined() || t.numel() <= 1 || t.is_contiguous() ||
      at::has_internal_overlap(t) != at::MemOverlap::No) {
    return std::nullopt;
  }
  return t.strides().vec();
}

at::Tensor InRunFormat(const std::map<std::string, std::vector<int64_t>>& formats,
                       const std::string& name, const at::Tensor& t) {
  auto it = formats.find(name);
  if (it == formats.end() || !t.defined() || t.dim() != static_cast<int64_t>(it->second.size())) {
    return t;
  }
  at::Tensor out = at::empty_strided(t.sizes(), it->second, t.options());
  out.copy_(t);
  return out;
}

namespace {

// Snapshots made contiguous; on the float64 targets rounded back to the
// program's dtypes, with the float64 values kept in `exact`.
void FinishOutputs(const graph::Node& node, const ops::TypeEnv& types, Target target,
                   NodeResult& nr) {
  if (target == Target::kCpuF64 || target == Target::kCudaF64) {
    for (auto& [name, g] : nr.value_grads) {
      auto it = types.find(name);
      if (it == types.end()) it = types.find(graph::FirstOrderBase(name));
      if (g.defined() && it != types.end() && g.scalar_type() != ToScalarType(it->second.dtype)) {
        nr.value_grads_exact[name] = g;
        g = ToDTypeKeepingNaNs(g, ToScalarType(it->second.dtype));
      }
    }
  }
  for (size_t i = 0; i < nr.outputs.size(); ++i) {
    at::Tensor& snap = nr.outputs[i];
    if (snap.defined()) snap = snap.contiguous();
    if (target == Target::kCpuF64 || target == Target::kCudaF64) {
      nr.exact.push_back(snap);
      auto it = i < node.results.size() ? types.find(node.results[i]) : types.end();
      if (snap.defined() && it != types.end() &&
          snap.scalar_type() != ToScalarType(it->second.dtype)) {
        snap = ToDTypeKeepingNaNs(snap, ToScalarType(it->second.dtype));
      }
    }
  }
}

// The backward node that does a composite op's arithmetic: a composite op
// (instance_norm, linear) ends in reshapes and views whose backward only moves
// values, so the bucket is named after the first node behind them that
// computes (instance_norm: NativeBatchNormBackward0, not ViewBackward0).
std::string ArithmeticGradFn(torch::autograd::Node* fn, uint64_t first_seq) {
  const std::string first = fn->name();
  for (int depth = 0; fn != nullptr && depth < 8; ++depth) {
    const std::string name = fn->name();
    if (!MovesOnly(name)) return name;
    torch::autograd::Node* next = nullptr;
    for (const torch::autograd::Edge& e : fn->next_edges()) {
      // Into the op's own graph only (nodes made since it was called): an
      // input's node (AccumulateGrad, a producer's) is not this op's.
      if (e.function && e.function->sequence_nr() >= first_seq &&
          e.function->sequence_nr() != UINT64_MAX) {
        next = e.function.get();
        break;
      }
    }
    fn = next;
  }
  return first;
}

// Runs one node whose inputs `lookup` resolves; defines its results through
// `define`. Its snapshots are on the CPU, finished by FinishOutputs (at once,
// or after the program's one synchronization when `deferred`).
// The gradient statement: torch::autograd::grad over the values `lookup`
// holds, with dL/dv captured for every value in `path` (forward results that
// require grad) on the way. An output that does not depend on the inputs
// contributes nothing, and an input that reaches no output gets zeros, as
// torch.autograd.grad(..., allow_unused=True, materialize_grads=True) does.
NodeResult ExecuteGradNode(const graph::Node& node, const ValueLookup& lookup,
                           const ops::TypeEnv& types, Target target,
                           const std::function<void(const std::string&, const at::Tensor&)>& define,
                           const std::vector<std::string>& path, bool create_graph,
                           const std::string& iterative, bool* cuda_fatal) {
  NodeResult nr;
  graph::GradCallOrError g = graph::ParseGradCall(node);
  if (!g.call) {
    nr.error = NodeError{NodeError::Kind::kBadArguments, g.error};
    return nr;
  }
  try {
    std::vector<at::Tensor> outs, cots, wrt;
    for (size_t i = 0; i < g.call->outputs.size(); ++i) {
      at::Tensor y = lookup(g.call->outputs[i]);
      if (!y.defined() || !y.requires_grad()) continue;
      outs.push_back(y);
      cots.push_back(lookup(g.call->cotangents[i]).detach());
    }
    // The backward of an op whose iterations a value bounds (matrix_exp's
    // squarings by the norm, the SVD's sweeps) iterates on the incoming
    // gradient too: a non-finite cotangent never ends it (a campaign on an
    // H200 hung in matrix_exp's backward). Declined, as its forward is.
    // The isolated lane runs it (a hang there is a finding).
    if (!iterative.empty() && !InIsolatedLane()) {
      for (const at::Tensor& v : cots) {
        if ((v.is_floating_point() || v.is_complex()) && !at::isfinite(v).all().item<bool>()) {
          nr.error = NodeError{NodeError::Kind::kRaised,
                               absl::StrCat("a non-finite cotangent into the backward of ",
                                            iterative,
                                            ", whose iterations its values bound (divfuzz runs "
                                            "it only in a campaign's isolated lane, "
                                            "--isolated_share)"),
                               /*declined=*/true, /*isolable=*/true};
          return nr;
        }
      }
    }
    std::vector<std::string> captured;
    for (const std::string& x : g.call->wrt) {
      wrt.push_back(lookup(x));
      captured.push_back(x);
    }
    for (const std::string& v : path) {
      if (std::find(captured.begin(), captured.end(), v) != captured.end()) continue;
      at::Tensor t = lookup(v);
      if (t.defined() && t.requires_grad()) {
        wrt.push_back(t);
        captured.push_back(v);
      }
    }
    std::vector<at::Tensor> grads(wrt.size());
    if (!outs.empty()) {
      try {
        grads = torch::autograd::grad(outs, wrt, cots, /*retain_graph=*/true, create_graph,
                                      /*allow_unused=*/true);
      } catch (const c10::Error&) {
        // The captures (kept to localize a divergence) reached a backward the
        // statement itself never needs: the CPU's flash attention has no
        // double backward, and asking for an earlier attention output's
        // gradient made one error split in both sessions 38 and 39 of a
        // statement that runs. Its own gradients alone, then, unlocalized; an
        // error of the statement's own raises again.
        if (wrt.size() == g.call->wrt.size()) throw;
        wrt.resize(g.call->wrt.size());
        captured.resize(g.call->wrt.size());
        grads = torch::autograd::grad(outs, wrt, cots, /*retain_graph=*/true, create_graph,
                                      /*allow_unused=*/true);
      }
    }
    for (size_t i = 0; i < g.call->wrt.size(); ++i) {
      at::Tensor gi = grads[i].defined() ? grads[i] : at::zeros_like(wrt[i].detach());
      define(node.results[i], gi);
      nr.outputs.push_back(Snapshot(gi));
    }
    for (size_t i = 0; i < wrt.size(); ++i) {
      if (!grads[i].defined()) continue;
      nr.value_grads[captured[i]] = Snapshot(grads[i]);
      if (auto f = RunStrides(grads[i])) nr.value_grad_formats[captured[i]] = *f;
      // A later statement differentiates this one's backward: it captures
      // dL2/d(dL1/dv) for these (graph/gradient.h, FirstOrderName).
      if (create_graph && grads[i].requires_grad() && !node.results.empty()) {
        define(graph::FirstOrderName(captured[i], node.results[0]), grads[i]);
      }
    }
    FinishOutputs(node, types, target, nr);
  } catch (const std::exception& e) {
    NodeError err = Classify(e.what());
    if (err.kind == NodeError::Kind::kCudaFatal && cuda_fatal != nullptr) *cuda_fatal = true;
    nr = NodeResult{};
    nr.error = std::move(err);
  }
  return nr;
}

NodeResult ExecuteNode(const graph::Node& node, const ValueLookup& lookup,
                       const ops::TypeEnv& types, Target target,
                       const std::function<void(const std::string&, const at::Tensor&)>& define,
                       bool* cuda_fatal, double* transfer_seconds = nullptr,
                       bool deferred = false) {
  NodeResult nr;
  if (graph::IsGradNode(node)) {
    nr.error = NodeError{NodeError::Kind::kBadArguments,
                         "a gradient statement runs only within its program"};
    return nr;
  }
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) {
    nr.error = NodeError{NodeError::Kind::kBadArguments,
                         absl::StrCat("no ATen operator named ", node.QualifiedName())};
    return nr;
  }
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  // The float64 targets hold every floating value in float64; an elementwise
  // op's operands are rounded to its result dtype first, as PyTorch does, and
  // the integer operands of one that promotes them to floating are cast to
  // its result dtype (as TensorIterator does), then upcast to float64.
  ValueLookup promoted = lookup;
  if (target == Target::kCpuF64 || target == Target::kCudaF64) {
    auto result = node.results.empty() ? types.end() : types.find(node.results[0]);
    if (spec != nullptr && result != types.end() && graph::IsFloating(result->second.dtype) &&
        (spec->rule == ops::Rule::kUnary || spec->rule == ops::Rule::kBinary ||
         spec->rule == ops::Rule::kUnaryScalar || (spec->hints & ops::kPointwise))) {
      const graph::DType to = result->second.dtype;
      const bool elementwise = spec->rule == ops::Rule::kUnary ||
                               spec->rule == ops::Rule::kBinary ||
                               spec->rule == ops::Rule::kUnaryScalar;
      promoted = [&lookup, &types, to, elementwise,
                  ints = IntegerValuesUpcast(node, types)](const std::string& name) {
        at::Tensor t = lookup(name);
        if (t.defined() && ints.count(name) > 0 &&
            at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
          return t.to(ToScalarType(to)).to(at::kDouble);
        }
        if (!elementwise) return t;
        auto it = types.find(name);
        return it == types.end() ? t : RoundedToResultDType(t, it->second.dtype, to);
      };
    }
  }
  absl::StatusOr<torch::jit::Stack> stack = BuildStack(handle->schema(), node, promoted);
  if (!stack.ok()) {
    nr.error = NodeError{NodeError::Kind::kBadArguments, std::string(stack.status().message())};
    return nr;
  }
  // An eps whose None means the epsilon of the input's opmath dtype (the
  // catalogue's opmath_eps_arg: rms_norm): the float64 targets pass the
  // program's, or their upcast would change the call (2.2e-16 for 1.19e-7).
  if ((target == Target::kCpuF64 || target == Target::kCudaF64) && spec != nullptr &&
      !spec->opmath_eps_arg.empty() && !node.args.empty() &&
      node.args[0].value.kind == graph::Literal::Kind::kValue) {
    auto in = types.find(node.args[0].value.s);
    const auto& params = handle->schema().arguments();
    for (size_t i = 0; in != types.end() && i < params.size() && i < stack->size(); ++i) {
      if (params[i].name() == spec->opmath_eps_arg && (*stack)[i].isNone()) {
        (*stack)[i] = in->second.dtype == graph::DType::kF64
                          ? std::numeric_limits<double>::epsilon()
                          : static_cast<double>(std::numeric_limits<float>::epsilon());
      }
    }
  }
  // A factory op (logspace with a tensor end point, new_full ...) with no
  // device makes a CPU tensor: on CUDA it belongs on the target's device, or
  // the next op fails with a device mismatch that is the program's fault.
  if (target == Target::kCuda || target == Target::kCudaF64) {
    const auto& params = handle->schema().arguments();
    for (size_t i = 0; i < params.size() && i < stack->size(); ++i) {
      if (params[i].name() == "device" && (*stack)[i].isNone()) (*stack)[i] = c10::Device(at::kCUDA);
    }
  }
  if (std::optional<std::string> why = UncheckedRead(*handle, *stack, &node, &types)) {
    const bool isolable = IsolatedLaneRuns(*handle);
    if (!isolable || !InIsolatedLane()) {
      nr.error = NodeError{NodeError::Kind::kRaised, *why, /*declined=*/true, isolable};
      return nr;
    }
  }
  if (target == Target::kCuda || target == Target::kCudaF64) {
    if (std::optional<std::string> why = IndexRejectedOnCpu(*handle, *stack)) {
      nr.error = NodeError{NodeError::Kind::kRaised,
                           absl::StrCat(*why,
                                        " (checked on the CPU before launch: the CUDA "
                                        "kernel would fail a device-side assert)")};
      return nr;
    }
  }
  try {
    // Inputs to check after the call (ops::GuardsItsInputs), as they were.
    // Copied inside the try: a CUDA error that surfaces here (another MPS
    // client's fault) must be classified like one in the call, or it kills
    // the worker as an uncaught exception (on the H100 that made six "crash
    // did not recur" buckets in linear-algebra programs).
    std::vector<std::pair<std::string, at::Tensor>> guarded;
    if (spec != nullptr && ops::GuardsItsInputs(*spec)) {
      for (const std::string& name : node.Uses()) {
        const at::Tensor t = lookup(name);
        if (t.defined() && t.numel() > 0 && (t.is_floating_point() || t.is_complex())) {
          guarded.emplace_back(name, t.detach().clone());
        }
      }
    }
    const uint64_t first_seq = at::sequence_number::peek();
    handle->callBoxed(&*stack);
    for (const auto& [name, before] : guarded) {
      if (at::Tensor now = lookup(name); !SameBits(before, now)) {
        // Restored, so the nodes after it read what the program made: the
        // finding is this op's, not theirs. (No autograd: an input may
        // require grad.)
        at::NoGradGuard no_grad;
        now.detach().copy_(before);
        nr.error = NodeError{NodeError::Kind::kRaised, InputWrittenMessage(name)};
        return nr;
      }
    }
    if (stack->size() != node.results.size()) {
      nr.error = NodeError{NodeError::Kind::kBadArguments,
                           absl::StrCat(node.QualifiedName(), " returned ", stack->size(),
                                        " values; the program names ", node.results.size())};
      return nr;
    }
    for (size_t i = 0; i < stack->size(); ++i) {
      const c10::IValue& v = (*stack)[i];
      if (v.isTensor()) {
        for (const std::string& name : node.Uses()) {
          const at::Tensor in = lookup(name);
          nr.returns_input = nr.returns_input || (in.defined() && v.toTensor().defined() &&
                                                  in.unsafeGetTensorImpl() ==
                                                      v.toTensor().unsafeGetTensorImpl());
        }
        define(node.results[i], v.toTensor());
        if (nr.grad_fn.empty() && v.toTensor().defined() && v.toTensor().grad_fn()) {
          nr.grad_fn = ArithmeticGradFn(v.toTensor().grad_fn().get(), first_seq);
        }
      }
      const auto copy_start = std::chrono::steady_clock::now();
      nr.outputs.push_back(Snapshot(v, deferred));
      if (transfer_seconds != nullptr) {
        *transfer_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_start).count();
      }
    }
    if (!deferred) FinishOutputs(node, types, target, nr);
  } catch (const std::exception& e) {
    NodeError err = ClassifyAt(node, types, e.what());
    if (err.kind == NodeError::Kind::kCudaFatal && cuda_fatal != nullptr) *cuda_fatal = true;
    nr = NodeResult{};
    nr.error = std::move(err);
  } catch (...) {
    nr = NodeResult{};
    nr.error = NodeError{NodeError::Kind::kRaised, "unknown exception"};
  }
  return nr;
}

// A CPU tensor as `target` consumes it.
at::Tensor Place(at::Tensor t, Target target) {
  if (target == Target::kCpuF64 || target == Target::kCudaF64) t = Upcast(t);
  if (target == Target::kCuda || target == Target::kCudaF64) t = t.to(at::kCUDA);
  return t;
}

bool& DeferredTransfersFlag() {
  static bool on = false;  // not yet measured on a GPU host: opt-in
  return on;
}

// The one synchronization of a deferred run, then each node's snapshots
// finished. A fault that surfaces here (kernels run asynchronously) is
// filed on the last node that ran, as a per-node sync would have filed it
// on the next one; either way locate replays it with CUDA_LAUNCH_BLOCKING.
void FinishDeferred(const graph::Program& program, const ops::TypeEnv& types, Target target,
                    RunResult& result) {
  const auto start = std::chrono::steady_clock::now();
  try {
    torch::cuda::synchronize();
  } catch (const std::exception& e) {
    NodeError err = Classify(e.what());
    if (err.kind == NodeError::Kind::kCudaFatal) result.cuda_fatal = true;
    for (auto it = result.nodes.rbegin(); it != result.nodes.rend(); ++it) {
      if (it->error) continue;
      *it = NodeResult{};
      it->error = std::move(err);
      break;
    }
  }
  result.transfer_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t n = 0; n < result.nodes.size() && n < program.nodes.size(); ++n) {
    if (graph::IsGradNode(program.nodes[n])) continue;  // finished when it ran
    if (!result.nodes[n].error) FinishOutputs(program.nodes[n], types, target, result.nodes[n]);
  }
}

}  // namespace

bool DeferredTransfers() { return DeferredTransfersFlag(); }
void SetDeferredTransfers(bool on) { DeferredTransfersFlag() = on; }

void SetCudaMathMode(const CudaMathMode& mode) {
  at::globalContext().setAllowTF32CuBLAS(mode.tf32);
  at::globalContext().setAllowTF32CuDNN(mode.tf32);
  at::globalContext().setAllowFP16ReductionCuBLAS(mode.reduced_precision_reductions);
  at::globalContext().setAllowBF16ReductionCuBLAS(mode.reduced_precision_reductions);
}

RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target) {
  return Run(program, types, target, nullptr);
}

RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target,
              const std::function<void(int)>& before_node) {
  return Run(program, types, target, before_node, nullptr);
}

RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target,
              const std::function<void(int)>& before_node, const InputInspector& inspect) {
  if (target == Target::kCpuScalar) return RunInScalarHelper(program);
  RunResult result;
  result.target = target;
  result.cpu_capability = CpuCapability();
  if ((target == Target::kCuda || target == Target::kCudaF64) && !CudaAvailable()) {
    result.setup_error = "CUDA is not available in this process";
    return result;
  }
  const CudaVariantGuard variant_guard(target.variants());  // this run only
  std::map<std::string, at::Tensor, std::less<>> env;
  std::set<std::string, std::less<>> failed;
  try {
    for (const graph::Input& in : program.inputs) {
      at::Tensor t = MakeInput(in);
      result.inputs[in.name] = t;
      // The layout comes last, on the target's device and dtype, so that a
      // move or upcast cannot make the tensor contiguous again.
      const auto copy_start = std::chrono::steady_clock::now();
      env[in.name] = ApplyLayout(Place(t, target), in.layout);
      if (auto f = RunStrides(env[in.name])) result.formats[in.name] = *f;
      result.transfer_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_start).count();
    }
  } catch (const std::exception& e) {
    // A CUDA fault while placing the inputs (a context an earlier program
    // poisoned) is the run's fault, not this program's error split: 619
    // hits of one '<inputs>' bucket in session 34.
    const NodeError err = Classify(e.what());
    result.setup_error = err.message;
    result.cuda_fatal = result.cuda_fatal || err.kind == NodeError::Kind::kCudaFatal;
    return result;
  }
  // Gradient statements: the inputs they differentiate against require grad
  // from the start (a detached alias keeps the layout), so the forward
  // records its graph. Elsewhere autograd records nothing.
  const bool gradients = graph::HasGradients(program);
  std::optional<at::AutoGradMode> grad_mode;
  if (gradients) {
    grad_mode.emplace(true);
    try {
      for (const std::string& x : graph::DifferentiatedInputs(program)) {
        auto it = env.find(x);
        if (it != env.end()) it->second = it->second.detach().requires_grad_(true);
      }
    } catch (const std::exception& e) {
      const NodeError err = Classify(e.what());
      result.setup_error = err.message;
      result.cuda_fatal = result.cuda_fatal || err.kind == NodeError::Kind::kCudaFatal;
      return result;
    }
  }
  // Values a gradient statement captures dL/dv for: every forward result so far.
  std::vector<std::string> path;
  const ValueLookup lookup = [&env](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? at::Tensor() : it->second;
  };
  const auto define = [&env, &result](const std::string& name, const at::Tensor& t) {
    env[name] = t;
    if (auto f = RunStrides(t)) result.formats[name] = *f;
  };
  // Deferred: on CUDA the outputs come back with one synchronization for
  // the whole program, not one per node (processes sharing a GPU wait for
  // their time slice at each one).
  const bool deferred =
      (target == Target::kCuda || target == Target::kCudaF64) && DeferredTransfers();

  for (const graph::Node& node : program.nodes) {
    if (before_node) before_node(static_cast<int>(result.nodes.size()));
    bool skipped = result.cuda_fatal;
    for (const graph::Argument& a : node.args) {
      const auto touches = [&](const graph::Literal& l) {
        return l.kind == graph::Literal::Kind::kValue && failed.count(l.s) > 0;
      };
      skipped = skipped || touches(a.value);
      for (const graph::Literal& item : a.value.list) skipped = skipped || touches(item);
    }
    NodeResult nr;
    if (skipped) {
      nr.error = NodeError{NodeError::Kind::kSkipped,
                           result.cuda_fatal ? "an earlier CUDA fault poisoned the context"
                                             : "an input came from a node that failed"};
    } else {
      if (inspect) {
        std::vector<at::Tensor> in;
        auto add = [&](const graph::Literal& l) {
          if (l.kind != graph::Literal::Kind::kValue) return;
          at::Tensor t = lookup(l.s);
          if (t.defined()) in.push_back(t.detach().to(at::kCPU));
        };
        try {
          for (const graph::Argument& a : node.args) {
            add(a.value);
            for (const graph::Literal& item : a.value.list) add(item);
          }
          inspect(static_cast<int>(result.nodes.size()), in);
        } catch (const std::exception&) {
          // Inspection is advisory: a copy that fails leaves the run as it was.
        }
      }
      if (graph::IsGradNode(node)) {
        // A graph a later gradient statement differentiates again is built
        // differentiable (second order).
        bool later = false;
        for (size_t j = result.nodes.size() + 1; j < program.nodes.size(); ++j) {
          later = later || graph::IsGradNode(program.nodes[j]);
        }
        std::string iterative;
        for (size_t j = 0; j < result.nodes.size() && iterative.empty(); ++j) {
          const ops::UncheckedPrecondition u = ops::UncheckedPreconditionOf(program.nodes[j].op);
          if (u == ops::UncheckedPrecondition::kFiniteMatrixNorm ||
              u == ops::UncheckedPrecondition::kFiniteInput) {
            iterative = program.nodes[j].op;
          }
        }
        nr = ExecuteGradNode(node, lookup, types, target, define, path, later, iterative,
                             &result.cuda_fatal);
      } else {
        nr = ExecuteNode(node, lookup, types, target, define, &result.cuda_fatal,
                         &result.transfer_seconds, deferred);
      }
    }
    if (gradients && !nr.error) path.insert(path.end(), node.results.begin(), node.results.end());
    if (graph::IsGradNode(node) && !nr.error && !node.results.empty()) {
      for (const auto& [v, g] : nr.value_grads) {
        const std::string name = graph::FirstOrderName(v, node.results[0]);
        if (env.count(name)) path.push_back(name);
      }
    }
    if (nr.error) failed.insert(node.results.begin(), node.results.end());
    result.nodes.push_back(std::move(nr));
  }
  if (deferred) FinishDeferred(program, types, target, result);
  return result;
}

NodeResult RunNode(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                   const ops::TypeEnv& types, Target target) {
  if (target == Target::kCpuScalar) return RunNodeInScalarHelper(node, values);
  if ((target == Target::kCuda || target == Target::kCudaF64) && !CudaAvailable()) {
    return NodeResult{{}, {}, NodeError{NodeError::Kind::kRaised, "CUDA is not available"}};
  }
  const CudaVariantGuard variant_guard(target.variants());  // this run only
  std::map<std::string, at::Tensor> placed;
  try {
    for (const auto& [name, t] : values) placed[name] = t.defined() ? Place(t, target) : t;
  } catch (const std::exception& e) {
    return NodeResult{{}, {}, Classify(e.what())};
  }
  const ValueLookup lookup = [&placed](const std::string& name) {
    auto it = placed.find(name);
    return it == placed.end() ? at::Tensor() : it->second;
  };
  return ExecuteNode(
      node, lookup, types, target, [](const std::string&, const at::Tensor&) {}, nullptr);
}

namespace {

// The autograd reruns (RunNodeVjp, RunNodeJvp) run in this process: not on
// cpu-scalar (a helper process), nor on CUDA without a device.
bool AutogradRunsOn(Target target) {
  if (target == Target::kCpuScalar) return false;
  return (target != Target::kCuda && target != Target::kCudaF64) || CudaAvailable();
}

// Runs `node` on `target` over values already placed there, collecting its
// tensor results (the forward of an autograd rerun).
// What RunNodeVjp does to the forward results a backward saves before the
// backward reads them (round_results, move_results); a MakeVjpNode step
// applies it to its inner forward's results, which its backward saves.
using SavedResults = std::function<void(std::vector<at::Tensor>&)>;

NodeResult ExecutePlaced(const graph::Node& node, const std::map<std::string, at::Tensor>& placed,
                         const ops::TypeEnv& types, Target target, std::vector<at::Tensor>* outs,
                         const SavedResults* saved = nullptr);

// A MakeVjpNode step: inner's forward, then its first-order backward with
// create_graph, its gradients the step's results.
NodeResult ExecuteVjpStep(const VjpEntry& e, const std::map<std::string, at::Tensor>& placed,
                          const ops::TypeEnv& types, Target target, std::vector<at::Tensor>* outs,
                          const SavedResults* saved) {
  NodeResult nr;
  std::vector<at::Tensor> inner_outs;
  NodeResult forward = ExecutePlaced(e.inner, placed, types, target, &inner_outs);
  if (forward.error) return forward;
  try {
    if (saved != nullptr) (*saved)(inner_outs);
    std::vector<at::Tensor> ys, vs, xs;
    for (size_t i = 0; i < inner_outs.size() && i < e.incoming.size(); ++i) {
      if (e.incoming[i].empty() || !inner_outs[i].defined() || !inner_outs[i].requires_grad()) {
        continue;
      }
      auto w = placed.find(e.incoming[i]);
      if (w == placed.end() || !w->second.defined()) continue;
      ys.push_back(inner_outs[i]);
      vs.push_back(w->second.to(inner_outs[i].scalar_type()));
    }
    for (const std::string& x : e.wrt) {
      auto it = placed.find(x);
      xs.push_back(it == placed.end() ? at::Tensor() : it->second);
    }
    std::vector<at::Tensor> grads(xs.size());
    if (!ys.empty()) {
      grads = torch::autograd::grad(ys, xs, vs, /*retain_graph=*/true, /*create_graph=*/true,
                                    /*allow_unused=*/true);
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      at::Tensor g = grads[i].defined() ? grads[i] : at::zeros_like(xs[i]);
      if (nr.grad_fn.empty() && g.grad_fn()) nr.grad_fn = g.grad_fn()->name();
      outs->push_back(g);
      nr.outputs.push_back(Snapshot(g));
    }
  } catch (const std::exception& ex) {
    nr = NodeResult{};
    nr.error = Classify(ex.what());
  }
  return nr;
}

NodeResult ExecutePlaced(const graph::Node& node, const std::map<std::string, at::Tensor>& placed,
                         const ops::TypeEnv& types, Target target, std::vector<at::Tensor>* outs,
                         const SavedResults* saved) {
  if (const VjpEntry* e = FindVjp(node)) {
    return ExecuteVjpStep(*e, placed, types, target, outs, saved);
  }
  const ValueLookup lookup = [&placed](const std::string& name) {
    auto it = placed.find(name);
    return it == placed.end() ? at::Tensor() : it->second;
  };
  return ExecuteNode(
      node, lookup, types, target,
      [outs](const std::string&, const at::Tensor& t) { outs->push_back(t); }, nullptr);
}

}  // namespace

namespace {
thread_local const std::function<bool(const std::string&)>* differentiate_only = nullptr;
}  // namespace

DifferentiateOnly::DifferentiateOnly(std::function<bool(const std::string&)> differentiates)
    : accepts_(std::move(differentiates)), previous_(differentiate_only) {
  differentiate_only = &accepts_;
}

DifferentiateOnly::~DifferentiateOnly() { differentiate_only = previous_; }

VjpResult RunNodeVjp(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                     const std::vector<at::Tensor>& cotangents, const ops::TypeEnv& types,
                     Target target, bool round_results,
                     const std::function<at::Tensor(size_t, const at::Tensor&)>& move_results,
                     const BackwardProbeOptions* probe, bool create_graph,
                     const VjpGraphVisitor* visit) {
  VjpResult r;
  if (visit != nullptr) create_graph = true;
  // ATen's scalar kernels run in the helper process, which takes programs:
  // the plain backward of a program's own node, from values it can print.
  if (target == Target::kCpuScalar) {
    if (round_results || move_results || probe != nullptr || create_graph ||
        VjpInner(node) != nullptr) {
      r.result.error = NodeError{NodeError::Kind::kRaised,
                                 "the cpu-scalar helper reruns a plain backward only"};
      return r;
    }
    std::vector<std::string> wrt_names;
    for (const std::string& name : node.Uses()) {
      auto it = values.find(name);
      if (it == values.end() || !it->second.defined()) continue;
      if ((it->second.is_floating_point() || it->second.is_complex()) &&
          (differentiate_only == nullptr || (*differentiate_only)(name))) {
        wrt_names.push_back(name);
      }
    }
    // A value read twice is one leaf per read below, and the node reads the
    // last: the earlier ones get zeros. The helper differentiates each once.
    std::vector<std::string> unique;
    for (const std::string& name : wrt_names) {
      if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
    }
    VjpResult h = RunNodeVjpInScalarHelper(node, values, cotangents, unique);
    if (h.result.error) return h;
    r.grad_fn = h.grad_fn;
    r.wrt = wrt_names;
    for (size_t i = 0; i < wrt_names.size(); ++i) {
      const size_t u = std::find(unique.begin(), unique.end(), wrt_names[i]) - unique.begin();
      const bool last = std::find(wrt_names.begin() + i + 1, wrt_names.end(), wrt_names[i]) ==
                        wrt_names.end();
      r.result.outputs.push_back(last ? h.result.outputs[u] : at::zeros_like(h.result.outputs[u]));
    }
    return r;
  }
  if (!AutogradRunsOn(target)) {
    r.result.error = NodeError{NodeError::Kind::kRaised, "no autograd on this target here"};
    return r;
  }
  const CudaVariantGuard variant_guard(target.variants());  // this run only
  at::AutoGradMode grad_mode(true);
  std::map<std::string, at::Tensor> placed;
  std::vector<at::Tensor> wrt;
  try {
    for (const std::string& name : node.Uses()) {
      auto it = values.find(name);
      if (it == values.end() || !it->second.defined()) continue;
      at::Tensor t = Place(it->second, target);
      if ((t.is_floating_point() || t.is_complex()) &&
          (differentiate_only == nullptr || (*differentiate_only)(name))) {
        t = t.detach().requires_grad_(true);
        r.wrt.push_back(name);
        wrt.push_back(t);
      }
      placed[name] = t;
    }
  } catch (const std::exception& e) {
    r.result.error = Classify(e.what());
    return r;
  }
  std::vector<at::Tensor> outs;
  const uint64_t first_seq = at::sequence_number::peek();
  // The results the backward saves, rounded to their dtypes (and moved):
  // a step inside a statement saves its inner forward's, not its own.
  const graph::Node* inner = VjpInner(node);
  const std::vector<std::string>& saved_names = inner ? inner->results : node.results;
  const SavedResults round_saved = [&](std::vector<at::Tensor>& saved) {
    if (saved.size() != saved_names.size()) return;
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < saved.size(); ++i) {
      auto it = types.find(saved_names[i]);
      if (!saved[i].defined() || it == types.end() ||
          !(saved[i].is_floating_point() || saved[i].is_complex())) {
        continue;
      }
      // variable_data(): a fresh version counter, so autograd's saved copy of
      // this output sees the rounded values without an in-place
      // modification error.
      at::Tensor data = saved[i].variable_data();
      at::Tensor rounded = ToDTypeKeepingNaNs(data.cpu(), ToScalarType(it->second.dtype))
                               .to(data.scalar_type());
      if (move_results) rounded = move_results(i, rounded).to(data.scalar_type());
      data.copy_(rounded);
    }
  };
  NodeResult forward = ExecutePlaced(node, placed, types, target, &outs,
                                     inner && round_results ? &round_saved : nullptr);
  r.grad_fn = forward.grad_fn;
  if (forward.error) {
    r.result.error = forward.error;
    return r;
  }
  try {
    if (round_results && !inner) round_saved(outs);
    std::vector<at::Tensor> ys, vs, incoming_leaves(cotangents.size());
    for (size_t i = 0; i < outs.size() && i < cotangents.size(); ++i) {
      if (!outs[i].defined() || !outs[i].requires_grad() || !cotangents[i].defined()) continue;
      ys.push_back(outs[i]);
      at::Tensor v = Place(cotangents[i], target).to(outs[i].scalar_type());
      if (visit != nullptr && (v.is_floating_point() || v.is_complex())) {
        v = v.detach().requires_grad_(true);
        incoming_leaves[i] = v;
      }
      vs.push_back(v);
    }
    // Only a probe's caller reads the op's own graph: the triage's many plain
    // reruns do not walk it.
    std::optional<BackwardProbe> observed;
    if (probe != nullptr) {
      const std::vector<torch::autograd::Node*> own = OwnBackwardNodes(ys, first_seq);
      r.computing_nodes = static_cast<int>(std::count_if(own.begin(), own.end(),
          [](torch::autograd::Node* fn) { return !MovesOnly(fn->name()); }));
      observed.emplace(own, first_seq, *probe);
    }
    std::vector<at::Tensor> grads(wrt.size());
    if (!ys.empty() && !wrt.empty()) {
      grads = torch::autograd::grad(ys, wrt, vs, /*retain_graph=*/create_graph, create_graph,
                                    /*allow_unused=*/true);
    }
    if (visit != nullptr) (*visit)(r.wrt, wrt, incoming_leaves, grads);
    for (size_t i = 0; i < wrt.size(); ++i) {
      at::Tensor g = grads[i].defined() ? grads[i].detach() : at::zeros_like(wrt[i].detach());
      at::Tensor host = Snapshot(g);
      if (target == Target::kCpuF64 || target == Target::kCudaF64) {
        r.result.exact.push_back(host);
        auto it = types.find(r.wrt[i]);
        if (it != types.end()) host = ToDTypeKeepingNaNs(host, ToScalarType(it->second.dtype));
      }
      r.result.outputs.push_back(host);
    }
    if (observed) r.steps = observed->steps();
  } catch (const std::exception& e) {
    r.result = NodeResult{};
    r.result.error = Classify(e.what());
  }
  return r;
}

NodeResult RunNodeJvp(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                      const std::map<std::string, at::Tensor>& tangents,
                      const ops::TypeEnv& types, Target target) {
  NodeResult r;
  if (!AutogradRunsOn(target)) {
    r.error = NodeError{NodeError::Kind::kRaised, "no forward-mode AD on this target here"};
    return r;
  }
  const CudaVariantGuard variant_guard(target.variants());  // this run only
  // One dual level for this call, released however it ends.
  struct Level {
    uint64_t idx = torch::autograd::ForwardADLevel::get_next_idx();
    ~Level() { torch::autograd::ForwardADLevel::release_idx(idx); }
  } level;
  const int64_t idx = static_cast<int64_t>(level.idx);
  std::map<std::string, at::Tensor> placed;
  try {
    for (const std::string& name : node.Uses()) {
      auto it = values.find(name);
      if (it == values.end() || !it->second.defined()) continue;
      at::Tensor t = Place(it->second, target);
      if (auto u = tangents.find(name); u != tangents.end() && u->second.defined()) {
        t = at::_make_dual(t, Place(u->second, target).to(t.scalar_type()), idx);
      }
      placed[name] = t;
    }
  } catch (const std::exception& e) {
    r.error = Classify(e.what());
    return r;
  }
  std::vector<at::Tensor> outs;
  NodeResult forward = ExecutePlaced(node, placed, types, target, &outs);
  if (forward.error) {
    r.error = forward.error;
    return r;
  }
  try {
    for (const at::Tensor& y : outs) {
      at::Tensor tangent;
      if (y.defined() && (y.is_floating_point() || y.is_complex())) {
        tangent = std::get<1>(at::_unpack_dual(y, idx));
        if (!tangent.defined()) tangent = at::zeros_like(std::get<0>(at::_unpack_dual(y, idx)));
      }
      r.outputs.push_back(tangent.defined() ? Snapshot(tangent) : at::Tensor());
    }
  } catch (const std::exception& e) {
    r = NodeResult{};
    r.error = Classify(e.what());
  }
  return r;
}

std::optional<MetaCall> CallOnMeta(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& values, bool upcast) {
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) return std::nullopt;
  std::map<std::string, at::Tensor> meta;
  try {
    for (const auto& [name, t] : values) {
      if (!t.defined()) continue;
      at::ScalarType dtype = t.scalar_type();
      if (upcast && at::isComplexType(dtype)) dtype = at::kComplexDouble;
      if (upcast && at::isFloatingType(dtype)) dtype = at::kDouble;
      meta[name] = at::empty_strided(t.sizes(), t.strides(),
                                     at::TensorOptions().dtype(dtype).device(at::kMeta));
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const ValueLookup lookup = [&meta](const std::string& name) {
    auto it = meta.find(name);
    return it == meta.end() ? at::Tensor() : it->second;
  };
  absl::StatusOr<torch::jit::Stack> stack = BuildStack(handle->schema(), node, lookup);
  if (!stack.ok()) return std::nullopt;
  MetaCall call;
  try {
    handle->callBoxed(&*stack);
    for (const c10::IValue& v : *stack) {
      if (v.isTensor() && v.toTensor().defined()) {
        const at::Tensor& t = v.toTensor();
        call.outputs.emplace_back(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                                  t.scalar_type());
      } else {
        call.outputs.emplace_back(std::vector<int64_t>{}, at::ScalarType::Undefined);
      }
    }
  } catch (const std::exception& e) {
    call.error = Classify(e.what()).message;
  }
  return call;
}

}  // namespace divfuzz::exec
