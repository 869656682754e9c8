// The C++ repro: built here with CMake against the installed libtorch (one
// build, about 20 s), run, and checked against what the executor computes.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/materialize.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "minimize/emit_cpp.h"
#include "oracles/policy.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using testing::CommandRun;
using ::testing::HasSubstr;
using testing::MustInfer;
using testing::MustParse;
using testing::RunShell;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Where find_package(Torch) looks: torch.utils.cmake_prefix_path, else what
// the project's own build was configured with.
std::string TorchPrefix() {
  const char* py = std::getenv("DIVFUZZ_PYTHON");
  const std::string python = py != nullptr && *py != '\0' ? py : "python3";
  CommandRun r = RunShell(
      python + " -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null");
  if (r.exit_code == 0 && !Trim(r.output).empty()) return Trim(r.output);
  std::ifstream cache(std::string(DIVFUZZ_BINARY_DIR) + "/CMakeCache.txt");
  std::string line;
  while (std::getline(cache, line)) {
    if (line.rfind("CMAKE_PREFIX_PATH:", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "";
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The numbers of an "exact:" line (hex floats or integers).
std::vector<double> Numbers(const std::string& line) {
  std::vector<double> out;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    if (tok == "...") break;
    out.push_back(std::strtod(tok.c_str(), nullptr));
  }
  return out;
}

// The "exact:" values printed right after the "<side>: dtype" line.
std::vector<double> PrintedExact(const std::string& output, const std::string& side) {
  std::istringstream lines(output);
  std::string line;
  bool in_side = false;
  while (std::getline(lines, line)) {
    if (line.rfind(side + ": dtype", 0) == 0) in_side = true;
    if (in_side && line.rfind("  exact: ", 0) == 0) return Numbers(line.substr(9));
  }
  return {};
}

std::vector<double> Doubles(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Inputs of every dtype, two in other layouts (unused by the diverging node, so
// --dump-inputs can check them bit for bit), a named argument, a list argument, and the
// diverging node: (1e8 + 1) - 1e8 is 0 in float32 and 1 in float64.
constexpr char kProgram[] = R"(divfuzz v1
input %a: f32[2,3] = values(100000000.0, 0.5, -2.0, 0.1, 3.0, -0.0)
input %b: f32[2,3] = fill(1.0)
input %h: f16[2,2] layout=transposed = special(seed=5)
input %g: bf16[3] = uniform(seed=1, low=-2.0, high=2.0)
input %w: c128[2] = values(0.1, -0.2, inf, nan)
input %i: i64[3] = values(-9223372036854775808, 9223372036854774784, 0)
input %u: u8[2] = values(0, 255)
input %t: bool[3] = values(1, 0, 1)
input %f: f32[4] layout=strided = values(-0.0, 0x1p-149, 0x1.fffffep+127, -inf)
%c = aten::add.Tensor(%a, %b, alpha=1)
%s = aten::sum.dim_IntList(%c, [1], True, dtype=f64)
%d = aten::sub.Tensor(%c, %a)
%e = aten::exp(%f)
output %d, %s, %e
)";

// Found by a campaign here: eigh of a matrix with one huge entry; cpu's
// V diag(w) V^T misses the float64 one.
constexpr char kEigh[] = R"(divfuzz v1
input %m: f32[4,4] = values(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0x1.2ced32p+126, 0, 0)
%w, %v = aten::linalg_eigh(%m)
output %w
)";

// Nondeterminism: x + rand_like(x) differs from run to run except at the NaN
// (a NaN matches a NaN), so the first difference is element 1.
constexpr char kRandom[] = R"(divfuzz v1
input %x: f32[3] = values(nan, -0.0, 1.0)
%r = aten::rand_like(%x)
%s = aten::add.Tensor(%x, %r)
output %s
)";

// A gradient statement (torch::autograd::grad): sinh'(90) = cosh(90)
// overflows float32 on the CPU, inf * 0.01 where the float64 gradient is
// 6.1e36; the unused input %w gets zeros.
constexpr char kGradient[] = R"(divfuzz v1
input %x: f32[4] = values(90.0, 1.0, 2.0, -3.0)
input %w: f32[2] = values(0.5, 0.25)
input %v: f32[4] = values(0.01, 0.5, 0.25, 0.125)
%y = aten::sinh(%x)
%gx, %gw = autograd::grad(%y, [%x, %w], grad_outputs=%v)
output %gx, %gw
)";

TEST(EmitCpp, BuildsAgainstLibtorchAndReproducesWhatTheExecutorSees) {
  const graph::Program p = MustParse(kProgram);
  ReproSpec spec;
  spec.node_index = 2;
  spec.title = "cancellation";
  spec.seen = "tolerance";
  const CppRepro repro = EmitCpp(p, spec);
  EXPECT_THAT(repro.cmake_lists, HasSubstr("find_package(Torch REQUIRED)"));
  EXPECT_THAT(repro.main_cpp, HasSubstr("c10::Dispatcher::singleton().findSchema"));

  const std::string prefix = TorchPrefix();
  if (prefix.empty()) GTEST_SKIP() << "no torch CMake folder found";
  const std::string dir = testing::TempDir("repro_cpp");
  std::ofstream(dir + "/main.cpp") << repro.main_cpp;
  // A second repro in the same build (one configure, compiled in parallel):
  // a decomposition, compared through its invariants.
  const graph::Program eigh = MustParse(kEigh);
  // (Its CUDA runs would go through MAGMA: a cuda+magma finding's repro.)
  ReproSpec eigh_spec;
  eigh_spec.backend = "magma";
  std::ofstream(dir + "/eigh.cpp") << EmitCpp(eigh, eigh_spec).main_cpp;
  // A third: a nondeterminism finding, which reruns cpu against itself.
  ReproSpec rerun;
  rerun.rerun_target = "cpu";
  std::ofstream(dir + "/random.cpp") << EmitCpp(MustParse(kRandom), rerun).main_cpp;
  // A fourth: a gradient statement.
  const graph::Program grad = MustParse(kGradient);
  ReproSpec grad_spec;
  grad_spec.node_index = 1;
  grad_spec.backward = "SinhBackward0, the backward of node 0 (aten::sinh)";
  std::ofstream(dir + "/grad.cpp") << EmitCpp(grad, grad_spec).main_cpp;
  std::ofstream(dir + "/CMakeLists.txt")
      << repro.cmake_lists
      << "add_executable(repro_eigh eigh.cpp)\n"
         "target_link_libraries(repro_eigh PRIVATE \"${TORCH_LIBRARIES}\" ${CMAKE_DL_LIBS})\n"
         "add_executable(repro_random random.cpp)\n"
         "target_link_libraries(repro_random PRIVATE \"${TORCH_LIBRARIES}\" ${CMAKE_DL_LIBS})\n"
         "add_executable(repro_grad grad.cpp)\n"
         "target_link_libraries(repro_grad PRIVATE \"${TORCH_LIBRARIES}\" ${CMAKE_DL_LIBS})\n";
  std::string configure = "cmake -S " + dir + " -B " + dir + "/build -DCMAKE_PREFIX_PATH=" + prefix;
  if (RunShell("command -v ninja").exit_code == 0) configure += " -G Ninja";
  if (RunShell("command -v ccache").exit_code == 0)
    configure += " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache";
  CommandRun r = RunShell(configure);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunShell("cmake --build " + dir + "/build -j2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string bin = dir + "/build/repro";

  // Reproduces, with the CPU values the executor computes, bit for bit.
  r = RunShell(bin);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64): tolerance"));
  EXPECT_THAT(r.output, HasSubstr("divfuzz saw: tolerance"));
  EXPECT_THAT(r.output, HasSubstr("torch "));
  EXPECT_THAT(r.output, HasSubstr("float64 reference from cpu's own inputs"));
  EXPECT_THAT(r.output, HasSubstr("WRONG SIDE: undecided"));
  const ops::TypeEnv types = MustInfer(p);
  const exec::RunResult cpu = exec::Run(p, types, exec::Target::kCpu);
  const exec::RunResult f64 = exec::Run(p, types, exec::Target::kCpuF64);
  for (const auto& [side, run] : {std::pair{"cpu", &cpu}, std::pair{"cpu-f64", &f64}}) {
    const std::vector<double> want = Doubles(run->nodes[2].outputs[0]);
    const std::vector<double> got = PrintedExact(r.output, side);
    ASSERT_EQ(got.size(), want.size()) << side << "\n" << r.output;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(SameBits(got[i], want[i])) << side << "[" << i << "]: " << got[i];
    }
  }

  // Every input bit for bit.
  r = RunShell(bin + " --dump-inputs");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::vector<double>> dumped;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    dumped[line.substr(0, line.find(' '))] = Numbers(line.substr(colon + 1));
  }
  // The layouts the repro builds, with their strides.
  EXPECT_THAT(r.output, HasSubstr("f Float [4] strided strides [2]: "));
  EXPECT_THAT(r.output, HasSubstr("h Half [2, 2] transposed strides [1, 2]: "));
  for (const graph::Input& input : p.inputs) {
    const std::vector<double> want = graph::MaterializePayload(input);
    const std::vector<double>& got = dumped[input.name];
    ASSERT_EQ(got.size(), want.size()) << input.name << "\n" << r.output;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << input.name << "[" << i << "]";
      } else if (input.type.dtype == graph::DType::kBool) {
        EXPECT_EQ(got[i] != 0, want[i] != 0) << input.name << "[" << i << "]";
      } else {
        EXPECT_TRUE(SameBits(got[i], want[i]))
            << input.name << "[" << i << "]: " << got[i] << " vs " << want[i];
      }
    }
  }

  // The same target twice: nothing to reproduce.
  r = RunShell(bin + " cpu cpu");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: no divergence"));
  if (!exec::CudaAvailable()) {
    r = RunShell(bin + " cuda cpu-f64");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("CUDA not available: skipping"));
  }
  EXPECT_EQ(RunShell(bin + " nope cpu").exit_code, 2);

  r = RunShell(dir + "/build/repro_eigh");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tolerance: invariant 1 of the decomposition"));
  EXPECT_THAT(r.output, HasSubstr("cpu invariant 1: dtype Float, shape [4, 4]"));
  // The switches are made (the setters run without a GPU) and may be overridden.
  EXPECT_THAT(r.output, HasSubstr("CUDA switches: magma (MAGMA)"));
  r = RunShell(dir + "/build/repro_eigh --backend=cusolver+cublaslt");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("CUDA switches: cusolver (cuSOLVER), cublaslt (cuBLASLt)"));
  r = RunShell(dir + "/build/repro_eigh --backend=bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--backend: unknown CUDA switch bogus"));

  r = RunShell(dir + "/build/repro_random");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("VERDICT: nondeterminism reproduces (cpu run 1 vs run 2): element 1: "));
  EXPECT_THAT(r.output, HasSubstr("; glibc's thread cache off): a kernel"));
  EXPECT_THAT(r.output, HasSubstr("cpu run 1: nan "));

  // The gradient: what the executor computes, bit for bit, on both sides.
  r = RunShell(dir + "/build/repro_grad");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backward kernel: SinhBackward0"));
  EXPECT_THAT(r.output, HasSubstr("class_split"));
  EXPECT_THAT(r.output, HasSubstr("float64 gradient (the whole program in float64"));
  EXPECT_THAT(r.output, HasSubstr("cpu misses the float64 gradient of the whole program"));
  EXPECT_THAT(r.output, HasSubstr("WRONG SIDE: cpu"));
  const ops::TypeEnv grad_types = MustInfer(grad);
  for (exec::Target t : {exec::Target::kCpu, exec::Target::kCpuF64}) {
    const exec::RunResult run = exec::Run(grad, grad_types, t);
    const std::vector<double> want = Doubles(run.nodes[1].outputs[0]);
    const std::string side(exec::TargetName(t));
    const std::vector<double> got = PrintedExact(r.output, side);
    ASSERT_EQ(got.size(), want.size()) << side << "\n" << r.output;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(SameBits(got[i], want[i])) << side << "[" << i << "]: " << got[i];
    }
  }
}

TEST(EmitCpp, BadSpecGivesAProgramThatExitsTwo) {
  const graph::Program p = MustParse(kProgram);
  ReproSpec spec;
  spec.node_index = 9;
  EXPECT_THAT(EmitCpp(p, spec).main_cpp, HasSubstr("return 2;"));
  spec.node_index = 0;
  spec.output_index = 3;
  EXPECT_THAT(EmitCpp(p, spec).main_cpp, HasSubstr("which has 1"));
}

TEST(EmitCpp, DecompositionsCompareInvariants) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %m: f32[3,3] = fill(1.0)
%q, %r = aten::linalg_qr(%m)
output %r
)");
  ReproSpec spec;
  spec.output_index = 1;
  EXPECT_THAT(EmitCpp(p, spec).main_cpp, HasSubstr("const char* const kInvariants = \"qr\";"));
  EXPECT_THAT(EmitCpp(MustParse(kProgram), ReproSpec{}).main_cpp,
              HasSubstr("const char* const kInvariants = \"\";"));
}

TEST(EmitCpp, LiteralsAreExact) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[4] = values(0.1, -inf, nan, -0.0)
%y = aten::clamp_min(%x, 0.1)
%z = aten::to.dtype(%y, f64)
output %z
)");
  const std::string cpp = EmitCpp(p, ReproSpec{}).main_cpp;
  EXPECT_THAT(cpp, HasSubstr("0x1.99999ap-4, -kInf, kNaN, -0x0p+0"));
  EXPECT_THAT(cpp, HasSubstr("{\"\", D(0x1.999999999999ap-4)}"));
  EXPECT_THAT(cpp, HasSubstr("T(at::kDouble)"));
  EXPECT_THAT(cpp, HasSubstr("const std::optional<at::ScalarType> kValueDType = at::kDouble;"));
}

TEST(EmitCpp, PolicyTolerancesReachTheProgram) {
  const graph::Program p = MustParse(kProgram);
  ReproSpec spec;
  spec.node_index = 2;  // aten::sub
  EXPECT_THAT(EmitCpp(p, spec).main_cpp, HasSubstr("{at::kFloat, 1.3e-06, 1e-05}"));
  absl::StatusOr<oracles::Policy> loose = oracles::ParsePolicy(
      R"({"defaults": {"f32": {"rtol": 2, "atol": 1e-5}}})", "loose.json");
  ASSERT_TRUE(loose.ok()) << loose.status();
  const std::string cpp = EmitCpp(p, spec, *loose).main_cpp;
  EXPECT_THAT(cpp, HasSubstr("{at::kFloat, 2, 1e-05}"));
  EXPECT_THAT(cpp, HasSubstr("{at::kComplexFloat, 2, 1e-05}"));
  EXPECT_THAT(cpp, HasSubstr("{at::kDouble, 1e-07, 1e-07}"));
  oracles::Policy per_op = oracles::DefaultPolicy();
  per_op.overrides["aten::sub"][graph::DType::kF32] = {1.3e-6, 2.0};
  EXPECT_THAT(EmitCpp(p, spec, per_op).main_cpp, HasSubstr("{at::kFloat, 1.3e-06, 2}"));
}

}  // namespace
}  // namespace divfuzz::minimize
