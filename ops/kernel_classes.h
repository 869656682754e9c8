// What kernels do, declared once and attached to catalogue entries (curated
// and generic alike) by the op's name: the kernel classes the oracle's rules
// key on (sums inside, transforms, scans, squares inside, internal int
// casts), the exact reference an op has (exec/exact_reference.h), and
// outputs PyTorch leaves to each device. Like OpInfo's per-op entries: one
// line per fact, with its reason.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "ops/op_spec.h"

namespace divfuzz::ops {

// Adds the facts that apply to `spec` (by its name, overload, family and the
// hints it already carries).
void ApplyKernelClasses(OpSpec& spec);

// The precondition PyTorch leaves unchecked for `name` ("aten::set_"), also
// for ops the catalogue does not fuzz (the executor may still meet them).
UncheckedPrecondition UncheckedPreconditionOf(absl::string_view name);

// The argument of `qualified` ("aten::linalg_lstsq") whose values PyTorch
// documents per device, or null.
const DeviceArgument* DeviceArgumentOf(absl::string_view qualified);

// Why `node` cannot be compared across devices when an argument of its
// op's schema makes it random (scaled_dot_product_attention's dropout_p
// other than 0), or nullopt.
std::optional<std::string> RandomArgumentOf(const graph::Node& node);

// The eps a normalization adds to its variance, as `node` gives it (by
// keyword or at its position in the op's schema) or by the schema's default
// (rms_norm's None: the epsilon of `dtype`'s opmath type); nullopt for an op
// that is not a normalization.
std::optional<double> NormalizationEpsOf(const graph::Node& node, graph::DType dtype);

// Where `node` gives a per-channel parameter of another shape than its
// documentation's (C), C the input's dim 1 (batch_norm's and instance_norm's
// weight, bias and running statistics, group_norm's weight and bias): more
// than one dim, or other than C values; what is wrong, or nullopt. The forward takes a [1, C] weight, the CPU's
// backward raises on it (pytorch#188358): an off-contract input, not a
// finding (session 43's INFRA verdict).
std::optional<std::string> ChannelParameterMisshapen(
    const graph::Node& node, const TypeEnv& types);

// The order p of the p-norm `node` forms (the catalogue's norm_order_arg,
// by position or as `p` / `ord`), when its op has one and it exceeds 2:
// the op sums |x|^p. nullopt otherwise.
std::optional<double> NormOrderOf(const graph::Node& node);

// Whether the op hands its input to a backend that PyTorch's notes let fail
// in any way on non-finite values ("Non-finite values": torch.linalg's
// backends "... or even segfault"; FFTs' libraries likewise): linear algebra,
// decompositions and transforms, each without a non-finite guarantee
// (kNoNonFiniteGuarantee). Reductions' missing guarantee covers values only
// (the order of inf - inf).
bool NonFiniteMayFailAnyway(const OpSpec& spec);

}  // namespace divfuzz::ops
