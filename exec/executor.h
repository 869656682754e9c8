// Runs a program on a target through the c10 dispatcher, so any ATen op named
// by its schema runs without per-op code. Never throws.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>
#include <string>

#include "absl/strings/string_view.h"
#include "exec/backward_probe.h"
#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

bool CudaAvailable();

// What a CUDA fault says in its message: it poisons the process's CUDA
// context (the executor's kCudaFatal; the repros count it as a crash).
extern const char* const kCudaFaultMessages[8];

// What ATen says when a kernel does not take a dtype (a dtype gap).
extern const char kNotImplementedMessage[];
// Everything ATen says when a kernel lacks the dtype (a dtype_gap, not an
// error_split): the dispatcher's "not implemented for", and kernels' own
// refusals (CUDA histc: "HalfTensor is not supported"; cuDNN on integer convolutions).
// (SDPA's "No available kernel": a cuda+sdpa_* target leaves one attention
// kernel, which refuses the inputs it was not built for, float32 in flash.)
extern const char* const kDtypeGapMessages[6];
bool SaysDtypeGap(absl::string_view message);
// What a node's error says when its op wrote into an input it does not
// declare mutable (ops::GuardsItsInputs; the repros say the same).
inline constexpr char kInputWritten[] = "wrote into its input";
// Visible CUDA devices (CUDA_VISIBLE_DEVICES applies); 0 without CUDA.
int CudaDeviceCount();

// ATen's CPU kernel capability in this process: "default", "avx2", "avx512".
std::string CpuCapability();

// `types` are the program's inferred types (ops::InferProgram); the cpu-f64
// target rounds its results back to them.
RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target);

// The same, calling `before_node(i)` before node i runs: how a supervisor
// learns which node a crash or hang happened in.
RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target,
              const std::function<void(int)>& before_node);

// The same, also calling `inspect(i, inputs)` before node i runs with CPU
// copies of the tensors it reads: how `divfuzz locate` learns what a node
// that then crashes or hangs was given (non-finite, near the maximum).
using InputInspector = std::function<void(int, const std::vector<at::Tensor>&)>;
RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target,
              const std::function<void(int)>& before_node, const InputInspector& inspect);

// A node's error as the oracle classes it (a dtype gap, a CUDA fault, a
// raise), from its message and the node's input dtypes: cuDNN's "unable to
// find an engine" on all-integer inputs is a dtype gap (no integer
// convolution on CUDA), on floating ones a raise.
NodeError ClassifyAt(const graph::Node& node, const ops::TypeEnv& types, std::string message);

// Runs one node on `target` with the given CPU values for its %refs (moved or
// upcast as the target needs): the oracle's per-node reference.
NodeResult RunNode(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                   const ops::TypeEnv& types, Target target);

// One backward step inside a gradient statement as a node of its own: the
// first-order backward of `inner`, reading inner's values and, per result of
// inner, its incoming gradient (`incoming`, "" where none), and giving the
// gradient inner sends each value of `wrt` (named `results`). It runs under
// autograd, differentiable again: RunNodeVjp of it reruns the double
// backward a later statement took through that step (GeluBackwardBackward0),
// from one side's own inputs. Its op is kVjpOp; the node is only valid in
// this process.
inline constexpr char kVjpOp[] = "autograd::vjp";
graph::Node MakeVjpNode(const graph::Node& inner, const std::vector<std::string>& incoming,
                        const std::vector<std::string>& wrt,
                        const std::vector<std::string>& results);
// The forward node a MakeVjpNode node steps back through; nullptr for others.
const graph::Node* VjpInner(const graph::Node& node);

// One forward node's backward on its own (a vector-Jacobian product): the
// node runs under autograd on `target` from `values`, then autograd takes the
// `cotangents` (one per result; undefined: none) back to each floating or
// complex value it reads (`wrt`, in Uses() order). Outputs are those
// gradients on the CPU (on the float64 targets rounded to the values' dtypes
// in `types`, float64 kept in `exact`). How the oracle judges one backward
// kernel from a side's own inputs, and its float64 witness. With
// `round_results`, the forward's results are rounded to their dtypes in
// `types` before the backward reads them: the float64 backward from the
// rounded outputs a kernel saves (softmax, logcumsumexp, log_ndtr reuse them);
// `move_results`, when given, then maps each rounded result (its index, its
// float64 value on the CPU) to the value the backward reads instead.
struct VjpResult {
  std::vector<std::string> wrt;
  NodeResult result;
  std::string grad_fn;  // the backward node PyTorch recorded ("SinhBackward0")
  // With a probe: the op's own backward nodes that compute (not views), more
  // than one for a composite op, whose backward rounds between its kernels.
  int computing_nodes = 0;
  std::vector<BackwardStep> steps;  // with a recording probe: each node's outputs
};
// Called, when given, with the backward's graph kept (create_graph): the
// leaves it differentiated against (`wrt`, in VjpResult::wrt's order), the
// incoming gradients as leaves (undefined where a result has none) and the
// gradients, so that a caller can differentiate one gradient element with
// respect to every value the backward read (gradient_backward_stable's
// worst-case directions).
using VjpGraphVisitor =
    std::function<void(const std::vector<std::string>& wrt_names,
                       const std::vector<at::Tensor>& wrt, const std::vector<at::Tensor>& incoming,
                       const std::vector<at::Tensor>& grads)>;
VjpResult RunNodeVjp(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                     const std::vector<at::Tensor>& cotangents, const ops::TypeEnv& types,
                     Target target, bool round_results = false,
                     const std::function<at::Tensor(size_t, const at::Tensor&)>& move_results =
                         nullptr,
                     const BackwardProbeOptions* probe = nullptr,
                     bool create_graph = false, const VjpGraphVisitor* visit = nullptr);

// While alive, RunNodeVjp on this thread differentiates only the inputs
// `differentiates` accepts (by value name), not every floating one: the
// oracle's reruns take the gradients the run's own backward took. An input
// the program never differentiated can make the engine reject its gradient's
// shape (batch_norm's weight given as [1, 1]: its backward returns [C];
// session 41's INFRA verdict) or send the kernel down another path (SDPA's
// backward for a mask that requires grad).
class DifferentiateOnly {
 public:
  explicit DifferentiateOnly(std::function<bool(const std::string&)> differentiates);
  ~DifferentiateOnly();
  DifferentiateOnly(const DifferentiateOnly&) = delete;
  DifferentiateOnly& operator=(const DifferentiateOnly&) = delete;

 private:
  std::function<bool(const std::string&)> accepts_;
  const std::function<bool(const std::string&)>* previous_;
};

// The same node in forward mode: `tangents` (by value name) ride along as
// dual numbers; outputs are the results' tangents (J u) on the CPU, in the
// target's dtype. Reverse and forward mode are separate code in PyTorch, so
// <u, J^T v> = <J u, v> checks one against the other on one side.
NodeResult RunNodeJvp(const graph::Node& node, const std::map<std::string, at::Tensor>& values,
                      const std::map<std::string, at::Tensor>& tangents,
                      const ops::TypeEnv& types, Target target);

// The integer %values of `node` that the float64 targets (cpu-f64, cuda-f64)
// upcast: those of an elementwise op (catalogue rule kUnary, kUnaryScalar or
// kBinary, or a kPointwise op; not a cast or comparison) whose result is
// floating, so the op promotes them to floating and computes there (sqrt,
// true division, special_zeta of int32). Each is cast to the result dtype
// first, as TensorIterator does, then upcast. Values bound to index-like
// parameters (index, indices, target, lengths, offsets, dim ...), ops with an
// indices output and calls with a dtype= argument keep theirs: an op that
// computes in integers has an integer reference. Empty for any other node.
std::set<std::string> IntegerValuesUpcast(const graph::Node& node, const ops::TypeEnv& types);

// What the meta kernel says of one node's call: the error it raises, or its
// outputs' shapes and dtypes. `values` give each %ref's shape, strides and
// dtype (their data is never read); with `upcast`, floating ones are float64
// (complex: complex128), as the float64 reference's call has them. nullopt
// when the node cannot be called here (an unknown op, bad arguments).
struct MetaCall {
  std::optional<std::string> error;
  std::vector<std::pair<std::vector<int64_t>, at::ScalarType>> outputs;
};
std::optional<MetaCall> CallOnMeta(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& values, bool upcast);

// CUDA math modes that trade accuracy for speed. Off by default in divfuzz,
// so CUDA runs full float32 precision unless a campaign asks otherwise.
struct CudaMathMode {
  bool tf32 = false;
  bool reduced_precision_reductions = false;  // fp16/bf16 reductions inside cuBLAS
};
void SetCudaMathMode(const CudaMathMode& mode);

// Whether Run on a CUDA target queues each node's outputs to the host and
// synchronizes once per program rather than once per node (the default).
// Off until a GPU host's `divfuzz bench --deferred_transfers` shows it pays.
bool DeferredTransfers();
void SetDeferredTransfers(bool on);

absl::string_view ErrorKindName(NodeError::Kind kind);

}  // namespace divfuzz::exec
