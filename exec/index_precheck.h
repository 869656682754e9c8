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

namespace divfuzz::exec {

// The CPU's error message (first line) when `op` on CPU copies of `stack`
// raises "out of bounds", "out of range" or "invalid max index"; nothing for other ops, other
// errors and success. `stack` itself is left as it was.
std::optional<std::string> IndexRejectedOnCpu(const c10::OperatorHandle& op,
                                              const torch::jit::Stack& stack);

// Index arguments that PyTorch's kernels read without any bounds check, on
// every device: ctc_loss's target labels (each must be a class of log_probs,
// in [0, C)). Out-of-range labels read memory outside log_probs: results are
// garbage that changes from run to run (no repro can pin it down) or the
// process segfaults. The executor declines to run such a node on every target
// and says why; nothing for other ops and in-range labels.
std::optional<std::string> UncheckedIndexRead(const c10::OperatorHandle& op,
                                              const torch::jit::Stack& stack);

}  // namespace divfuzz::exec
