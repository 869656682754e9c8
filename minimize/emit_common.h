// What the two repro emitters (emit_python.cc, emit_cpp.cc) share: the
// harness files' blocks, the constants rendered into them from divfuzz's own
// declarations (the policy in effect above all), and the walk over the spec's
// node, the inputs and the nodes that both write in their own syntax.
//
// A harness (minimize/harness/repro_harness.py, repro_harness_main.cc) is a
// real source file, embedded at build time (divfuzz_embed_text). Its blocks
// are the lines from "<comment> divfuzz-harness begin NAME" to
// "<comment> divfuzz-harness end NAME": the emitter replaces some with the
// program's text (what stands there in the file only keeps it importable or
// compilable) and keeps the others' lines (without the marker lines).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "exec/target.h"
#include "graph/program.h"
#include "minimize/emit_python.h"
#include "oracles/policy.h"

namespace divfuzz::minimize {

// The harness with each block named in `blocks` replaced by its text and the
// marker lines of the others dropped. `comment` is "#" or "//".
std::string FillHarness(absl::string_view harness, absl::string_view comment,
                        const std::map<std::string, std::string>& blocks);

// The lines of one block (empty when the harness has none of that name).
std::string HarnessBlock(absl::string_view harness, absl::string_view comment,
                         absl::string_view name);

// The constants every repro harness needs, from the one C++ declaration of
// each: both emitters render them in their language.
struct HarnessConstants {
  struct DTypeTolerance {
    graph::DType dtype;
    oracles::Tolerance tolerance;
  };
  struct FloatBits {
    graph::DType dtype;
    int mantissa;       // bits (graph::Epsilon)
    int tiny_exponent;  // of the smallest subnormal (graph::DenormMin)
  };
  // The policy's tolerance at the diverging op (oracles::Policy::For, as the
  // oracle judges that node), per floating and complex dtype.
  std::vector<DTypeTolerance> tolerances;
  std::vector<FloatBits> float_bits;  // floating and complex dtypes
  std::vector<std::string> targets;   // the targets a repro runs (exec::TargetName)
  std::vector<std::string> cuda_faults;
  int perturb_odd = 0, perturb_even = 0;  // malloc's byte on odd, even runs (exec/)
  // What an error says when a kernel lacks the dtype (dtype_gap, not error_split).
  std::vector<std::string> dtype_gaps;
  // The environment flag a repro sets when it restarts itself with glibc's
  // malloc thread cache off, and the tunable that turns the cache off.
  std::string malloc_cache_off, no_malloc_cache;
  // How long a hang check gives its child to start running the program
  // before the hang's clock starts.
  int start_seconds = 0;
  double poll_seconds = 0;  // how often a hang check looks at its child
  int exact_limit = 0;      // how many elements a repro prints exactly
  std::string input_written;  // exec::kInputWritten
  // The CUDA switches a repro's --backend takes (exec/cuda_variants.def).
  struct Switch {
    std::string name, library, python, cpp;
  };
  std::vector<Switch> switches;
};
// The repros run base targets ("cuda"); a target's CUDA switches
// ("cuda+magma") are their --backend. "cuda+magma" -> "cuda".
std::string BaseTargetName(const std::string& target);
// spec.target_a/b: the two targets' base names; spec.backend: the switches of
// the first CUDA side that has some ("magma+cublaslt").
void SetReproTargets(exec::Target a, exec::Target b, ReproSpec* spec);

HarnessConstants ConstantsFor(const oracles::Policy& policy, const std::string& op);

// The nodes whose op must leave its inputs as they were (ops::GuardsItsInputs).
std::vector<int> GuardedNodes(const graph::Program& program);


// The shortest decimal text that reads back as exactly `v` (finite values).
std::string ShortestDouble(double v);

// Items joined by ", " and wrapped into lines of at most ~100 columns, each
// starting with `indent`.
std::string WrapItems(const std::vector<std::string>& items, const std::string& indent);

// "%c = aten::add.Tensor(%a, %b)", as in the .dfz text.
std::string NodeText(const graph::Node& node);

// "%x: f32[2, 3] = <payload>": an input as a comment shows it.
std::string InputText(const graph::Input& input, size_t name_max, size_t payload_max,
                      std::string (*comment)(absl::string_view, size_t));

// Whether every element (complex: every (re, im) pair) of a payload has the
// bits of the first.
bool UniformPayload(const std::vector<double>& values, size_t per);

// "%v, result 0 of node 3 (aten::logdet)": what the repro compares.
std::string Where(const graph::Program& program, const ReproSpec& spec, int node_index);

// The lines (each starting with `prefix`) that say what the repro checks
// beyond comparing two targets; `flags`: name the script's options.
std::string CheckLines(const ReproSpec& spec, absl::string_view prefix, bool flags);

// Each language's spelling of the literals a program holds.
struct LiteralSyntax {
  std::string none, yes, no;
  std::string (*integer)(int64_t);
  std::string (*floating)(double);
  std::string (*text)(absl::string_view);
  std::string (*dtype)(graph::DType);
  std::string (*value)(absl::string_view);
  std::string list_open, list_close;
};
std::string FormatLiteral(const graph::Literal& l, const LiteralSyntax& syntax);

// A dtype as torch ("torch.float32") and ATen ("at::kFloat") spell it.
absl::string_view TorchDTypeName(graph::DType dtype);
absl::string_view AtenDTypeName(graph::DType dtype);

}  // namespace divfuzz::minimize
