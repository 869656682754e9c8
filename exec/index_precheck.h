// CUDA kernels check indices with device-side asserts, which poison the
// process's CUDA context for good: every later node, program and (through a
// corpus input) worker restart would fail. The CPU kernels raise an ordinary
// error for the same arguments, so the executor tries a node that takes
// index-like integer tensors (schema arguments named index, indices, target,
// targets, offsets) on CPU copies first, and an index the CPU calls out of
// bounds never reaches the GPU.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>

#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

// The CPU's error message (first line) when `op` on CPU copies of `stack`
// raises "out of bounds", "out of DATA bounds", "out of range", "invalid max
// index" or (masked_scatter, whose CUDA kernel asserts it on the device) "number
// of ones in mask"; nothing for other ops, other errors and success. `stack`
// itself is left as it was.
std::optional<std::string> IndexRejectedOnCpu(const c10::OperatorHandle& op,
                                              const torch::jit::Stack& stack);

// Arguments that PyTorch's kernels read past without any bounds check, on
// every device. Out-of-range reads give garbage that changes from run to run
// (no repro can pin it down) or segfault the process, and a reducer shrinking
// a real finding drifts into them. The executor declines to run such a node
// on every target and says why; nothing for other ops and valid arguments:
// - ctc_loss's target labels (each must be a class of log_probs, in [0, C));
// - slow_conv3d's and slow_conv_transpose2d/3d's weight, whose spatial dims
//   must cover kernel_size (the kernels walk kernel_size over the weight);
// - set/set_'s source, whose dtype must be self's (its storage is viewed as
//   self's dtype: 3 float32 read as 3 float64 run 12 bytes past the end).
//
// `node` and `types`, when given, are the program's: a dtype check then uses
// the declared dtypes, so cpu-f64 (whose inputs are all float64) declines the
// same node as cpu does.
std::optional<std::string> UncheckedRead(const c10::OperatorHandle& op,
                                         const torch::jit::Stack& stack,
                                         const graph::Node* node = nullptr,
                                         const ops::TypeEnv* types = nullptr);

// Whether what UncheckedRead declines for `op` is a hang or a crash the lane
// survives (a loop bounded only by a value: the degree, matrix_exp's norm,
// the SVD's, QR's and eig's iterations on NaN/inf, LAPACK's geev segfault),
// so a campaign runs it in its isolated lane (fuzz/campaign/isolated_lane.h),
// where a hang or crash is a finding. The unchecked reads (ctc labels, the
// conv weight, set_'s dtype) stay declined everywhere: what they read is
// undefined, so no run can be judged or reproduced.
bool IsolatedLaneRuns(const c10::OperatorHandle& op);

// Whether this process is the isolated lane: the executor then runs what
// IsolatedLaneRuns allows (and a non-finite cotangent into an iterative
// backward) instead of declining it. Set by EnterIsolatedLane or by
// DIVFUZZ_ISOLATED_LANE=1 in the environment (which EnterIsolatedLane sets,
// so helper processes, the cpu-scalar target's, are in the lane too).
inline constexpr char kIsolatedLaneVariable[] = "DIVFUZZ_ISOLATED_LANE";
bool InIsolatedLane();
void EnterIsolatedLane();

}  // namespace divfuzz::exec
