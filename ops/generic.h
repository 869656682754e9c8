// The schema-driven generic path: ATen ops the catalogue has no curated entry
// for, described by their schema's argument kinds. ops/ knows no libtorch, so
// the schemas come from a provider that exec/ installs (it walks the c10
// dispatcher), and output types from an inference hook exec/ installs (it runs
// the op on the Meta device).
//
// Which argument forms an op accepts is learned, not written down: `divfuzz
// ops --learn` tries every (dtype, shape form) on the real kernels and writes
// the accepted ones to a table (ops/generic_table.txt, compiled in). An op is
// generated only with forms the table lists; an op with none is dropped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "ops/op_spec.h"

namespace divfuzz::ops {

struct GenericArg {
  enum class Kind {
    kTensor,
    kTensorList,
    kInt,
    kIntList,
    kFloat,
    kFloatList,
    kBool,
    kBoolList,
    kScalar,
    kScalarType,
    kString,
    kOther,  // device, layout, memory format ...: only None
  };
  std::string name;
  Kind kind = Kind::kOther;
  bool optional = false;     // None is accepted
  bool has_default = false;  // may be left out
  bool kwarg_only = false;
};

// How the generator shapes an op's tensor arguments. Index-like tensors
// (index, indices) are i64 within range and masks are bool in every form.
enum class ShapeForm {
  kSame1,      // every tensor [n]
  kSame2,      // every tensor [m,n]
  kSame3,      // every tensor [b,m,n]
  kSame4,      // every tensor [n,c,h,w] (convolution, pooling)
  kScalar,     // every tensor 0-d
  kSquare,     // every tensor [n,n] or [b,n,n] (matmul and linear algebra)
  kBroadcast,  // the first [m,n] or [b,m,n], the others broadcast to it
  kSame5,      // every tensor [n,c,d,h,w] (3-d interpolation, pooling, padding, convolution)
  kGrid,       // grid_sampler: input [n,c,h,w] (or [n,c,d,h,w] for a 3d op), grid
               // [n,h',w',2] (or [n,d',h',w',3]) in [-1, 1]; ops without a grid skip it
  kClasses,    // losses over classes: input [n,c] (or [n,c,h,w] for a 2d op), target i64
               // [n] (or [n,h,w]) in [0, c); ops without a target skip it
};
inline constexpr int kNumShapeForms = 10;
absl::string_view ShapeFormName(ShapeForm form);

// One learned argument form and how often the real kernels accepted it: on
// every device at once (accepted), and on each device alone (per_device, in
// the table's device order; empty in a table learned before devices were
// counted apart).
struct GenericForm {
  graph::DType dtype;
  ShapeForm shape;
  int accepted = 0;
  int tried = 0;
  std::vector<std::pair<std::string, int>> per_device;
  // Kept although some device rejects it: the pair is a dtype gap or a
  // one-sided error, a finding in itself, generated at kOneSidedShare.
  bool one_sided = false;
};

struct GenericOp {
  std::string name;      // "aten::hardtanh"
  std::string overload;  // "" for the default overload
  std::vector<GenericArg> args;
  int num_returns = 1;
  std::string family;              // guessed from the name, for reports
  bool pointwise = false;          // the dispatcher's `pointwise` tag (native_functions.yaml)
  std::vector<GenericForm> forms;  // learned; empty until a table is applied
  std::string Qualified() const;
};

// Every candidate op the provider offers (all functional ATen ops whose
// arguments divfuzz can express), unfiltered by the table. Empty without a
// provider (binaries that do not link exec/).
using GenericProvider = std::vector<GenericOp> (*)();
void SetGenericProvider(GenericProvider provider);
const std::vector<GenericOp>& GenericCandidates();

// Output types of a generic node whose tensor inputs are typed in env.
using GenericInferHook = std::function<absl::StatusOr<std::vector<graph::TensorType>>(
    const graph::Node& node, const TypeEnv& env)>;
void SetGenericInferHook(GenericInferHook hook);
absl::StatusOr<std::vector<graph::TensorType>> InferGeneric(const graph::Node& node,
                                                            const TypeEnv& env);

// The learned table. Text, one op a line:
//   aten::name[.overload] dtype:form:accepted/tried[:device=accepted...] ...
// accepted counts the calls every device ran; device=accepted the calls that
// device ran. '#' starts a comment; the first comment line names the devices
// it was learned on. The built-in table is ops/generic_table.txt.
absl::string_view BuiltinGenericTable();
// Parses a table: qualified name -> forms. Errors name the line.
absl::StatusOr<std::vector<std::pair<std::string, std::vector<GenericForm>>>> ParseGenericTable(
    absl::string_view text);
std::string FormatGenericTable(const std::vector<GenericOp>& ops, absl::string_view devices);

// A form is kept for generation when the kernels accepted at least this share
// of at least this many generated calls (one lucky call proves little).
inline constexpr double kKeepFormRate = 0.9;
inline constexpr int kKeepFormMinTried = 2;
// A form that one device accepts at that rate and another rejects is kept as
// one-sided: generation picks such pairs for this share of the ops it appends
// (each is a dtype_gap or error_split finding; more would crowd out the rest).
inline constexpr double kOneSidedShare = 0.05;
// Which of a table's forms generation keeps, and whether as one-sided.
enum class FormUse { kDropped, kKept, kOneSided };
FormUse UseOf(const GenericForm& form);

// The generic ops that generation uses: candidates with at least one kept
// form in the built-in table (or the one named by $DIVFUZZ_OP_TABLE).
const std::vector<GenericOp>& GenericOps();
const GenericOp* FindGeneric(absl::string_view qualified);
// Whether `spec` has a one-sided form (a pair some device rejects) in dtype.
bool OneSided(const OpSpec& spec, graph::DType dtype);
// The OpSpec of a generic op (rule kGeneric), for the catalogue.
OpSpec GenericSpec(const GenericOp& op);

}  // namespace divfuzz::ops
