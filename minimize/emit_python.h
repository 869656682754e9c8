// The standalone Python repro: a script that needs only torch, rebuilds every
// input bit-exactly, runs the program's nodes through torch.ops.aten on the
// CPU, on CUDA (skipped with a message when absent) and on the float64
// reference, prints the environment and the three values of the diverging
// output (and their exact bits), each side's float64 reference of the
// diverging node computed from its own inputs with the error in ULPs, judges
// the two targets with the oracle's rules, says which side is wrong, and
// exits 1 when the divergence reproduces (0 when it does not, 2 when the
// script itself fails), so it can drive `git bisect run`. For a
// nondeterminism finding (ReproSpec::rerun_target) the verdict is instead
// whether reruns of that target differ bit for bit.
#pragma once

#include <map>
#include <string>

#include "graph/program.h"
#include "oracles/policy.h"

namespace divfuzz::minimize {

struct ReproSpec {
  // Targets the script compares by default: "cpu", "cuda", "cpu-f64" (every
  // floating input upcast to float64 on the CPU, results rounded back to the
  // program's dtype) or "cpu-scalar" (ATen's scalar CPU kernels, in a child
  // process). The script's --target-a/--target-b override them.
  std::string target_a = "cpu";
  std::string target_b = "cpu-f64";
  // CUDA switches the CUDA runs make ("magma+cublaslt": a cuda+magma+cublaslt
  // target; the scripts' --backend overrides it). Empty: the defaults.
  std::string backend;
  // The finding's diverging output: result `output_index` of
  // program.nodes[node_index]. -1: the node defining the program's first
  // output (or the last node when the program names no output).
  int node_index = -1;
  int output_index = 0;
  std::string title;  // one line, e.g. "aten::logdet: -inf on cpu, finite on cpu-f64"
  // What the fuzzer saw, one line the script prints (informational), e.g.
  // "class_split, wrong side cpu: cpu -inf, cpu-f64 -4.605170249938965".
  std::string seen;
  // A nondeterminism finding: the target that disagreed with itself. The
  // repros then rerun it (up to kNondeterminismRuns times) and exit 1 when two
  // runs differ bit for bit, instead of judging target A against target B.
  // Empty: compare A with B.
  std::string rerun_target;
  // How often the repros run target A against target B before saying the
  // divergence does not reproduce: more than one for a kernel whose writes
  // race (ReproAttempts), so a divergence that shows on some runs only is
  // still found, and the script says it varies.
  int attempts = 1;
  // A finding that hangs or crashes a kernel ("hang", "crash"; empty: a
  // divergence): the repros run `failure_target` in a child process and exit
  // 1 when it is still running after `hang_seconds` (hang) or dies by a
  // signal or a CUDA fault (crash), instead of comparing two targets.
  std::string failure;
  std::string failure_target;
  int hang_seconds = 20;
  // divfuzz's exact witness (MPFR, exact rationals) at the diverging element
  // `exact_element` of the output, from each side's own inputs (target ->
  // value), when it decided the finding: the repros then judge the sides by
  // it, as report.md does, since a float64 run of the same kernels cannot.
  // Empty: none.
  long long exact_element = -1;
  std::map<std::string, double> exact;
  // A finding at a gradient statement whose backward kernel divfuzz found
  // (Divergence::backward_of): that kernel and its forward node, one line
  // both repros print, e.g. "SinhBackward0, the backward of node 0
  // (aten::sinh)". Empty: none.
  std::string backward;
};

// How often the repros run the target of a nondeterminism finding, and for
// how long at most: a minimal program runs in milliseconds, and a race may
// show rarely. (Reads of memory never written show at once: the runs
// alternate malloc's perturb byte, exec/malloc_perturb.h.)
// (A CUDA scatter_add race in f16 showed at run 48 of repro.py on the H100
// and in none of repro_cpp's 643 runs in 30 s.)
inline constexpr int kNondeterminismRuns = 2000;
inline constexpr int kNondeterminismSeconds = 60;
// Attempts at an A/B divergence for a kernel whose writes race (each runs
// every target, the cpu-scalar helper process included).
inline constexpr int kRacingAttempts = 100;

// Whether a node of `program` running a signature's op ("aten::x|f32|...")
// may give different results from run to run (oracles::MayVaryBetweenRuns).
bool RacesAt(const graph::Program& program, const std::string& signature);

// ReproSpec::attempts for a divergence at the program's node `node_index`:
// kRacingAttempts when that node may vary between runs, else 1.
int ReproAttempts(const graph::Program& program, int node_index);

// The diverging node's index (spec.node_index, or the node defining the first
// output, or the last node). When the spec names no node or result of the
// program, *error says so (both emitters turn it into a program that exits 2).
int ResolveNode(const graph::Program& program, const ReproSpec& spec, std::string* error);

// The script's text: the program part and minimize/harness/repro_harness.py,
// with `policy`'s tolerances at the diverging op (the policy in effect: pass
// the one the finding was judged by). Never fails: a spec that names no node
// of the program yields a script that says so and exits 2.
std::string EmitPython(const graph::Program& program, const ReproSpec& spec,
                       const oracles::Policy& policy = oracles::DefaultPolicy());

// A short script for pasting into an issue: the inputs (bit-exact), the
// program's nodes up to the diverging one, and the diverging output printed
// on the CPU, on CUDA when available, and in float64 (every floating input
// upcast). No verdict logic; EmitPython's script has that.
std::string EmitPythonSnippet(const graph::Program& program, const ReproSpec& spec);

}  // namespace divfuzz::minimize
