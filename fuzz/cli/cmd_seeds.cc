// divfuzz seeds: a seed corpus with programs from every op family, each
// checked to run on the CPU without argument errors, so a campaign starts
// from every corner of the catalogue instead of waiting for mutation to
// reach it. With --gradients, programs per backward kernel: a campaign's
// gradient findings came from the backward kernels its seeds differentiate
// (session 45's 40 backward nodes were the 17 gradient seeds' ops and their
// neighbours), so every differentiable op's grad_fn gets seeds of its own.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "fuzz/campaign/spawn.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "graph/gradient.h"
#include "graph/printer.h"
#include "mutators/gradient_mutations.h"
#include "mutators/mutator.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

// Every node ran on the CPU (errors other than bad arguments are findings,
// not invalid seeds) and at least one node is of the family.
bool RunsOnCpu(const graph::Program& p, const std::string& family) {
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return false;
  bool of_family = false;
  for (const graph::Node& n : p.nodes) {
    const ops::OpSpec* spec = ops::FindOp(n.QualifiedName());
    of_family = of_family || (spec != nullptr && std::string(spec->family) == family);
  }
  if (!of_family) return false;
  const exec::RunResult r = exec::Run(p, *types, exec::Target::kCpu);
  if (!r.setup_error.empty()) return false;
  for (const exec::NodeResult& n : r.nodes) {
    if (n.error && n.error->kind == exec::NodeError::Kind::kBadArguments) return false;
  }
  return true;
}

// The backward node PyTorch recorded for `op`'s node when the whole program,
// forward and backward, ran on the CPU without any error; empty otherwise.
std::string BackwardOnCpu(const graph::Program& p, const std::string& op) {
  if (!graph::HasGradients(p)) return "";
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return "";
  const exec::RunResult r = exec::Run(p, *types, exec::Target::kCpu);
  if (!r.setup_error.empty() || r.nodes.size() != p.nodes.size()) return "";
  std::string grad_fn;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (r.nodes[i].error) return "";
    if (grad_fn.empty() && p.nodes[i].QualifiedName() == op) grad_fn = r.nodes[i].grad_fn;
  }
  return grad_fn;
}

// Progress of `seeds --gradients`, in DIR/.seeds-gradients.json: the ops
// done, the backward kernels and dtypes written, and the op being tried (so
// the supervisor can name an op whose backward killed the process and go on
// without it: libtorch's CPU group_norm and pdist backwards have crashed).
constexpr char kProgressName[] = ".seeds-gradients.json";
constexpr char kChildEnv[] = "DIVFUZZ_SEEDS_CHILD";
// The child's exit when one op's programs run past --probe_timeout.
constexpr int kHangExit = 4;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

nlohmann::json ReadProgress(const std::string& path) {
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) j = nlohmann::json::object();
  for (const char* key : {"done", "written", "failed"}) {
    if (!j.contains(key) || !j[key].is_object()) j[key] = nlohmann::json::object();
  }
  return j;
}

bool WriteProgress(const std::string& path, const nlohmann::json& j) {
  const absl::Status s = store::WriteFileAtomically(path, j.dump(1) + "\n");
  if (!s.ok()) std::cerr << "divfuzz seeds: " << s.message() << "\n";
  return s.ok();
}

// Whether `spec` can be differentiated at all: a floating dtype and no
// randomness (random ops are never differentiated: issue 31).
bool Differentiable(const ops::OpSpec& spec) {
  bool floating = false;
  for (graph::DType d : {graph::DType::kF16, graph::DType::kBF16, graph::DType::kF32,
                         graph::DType::kF64}) {
    floating = floating || ops::Has(spec.dtypes, d);
  }
  graph::Node probe;
  const std::string q = spec.Qualified();
  probe.op = q.substr(0, q.find('.'));
  return floating && !mutators::IsRandomOp(probe);
}

// The child's work: every op not done yet, its programs written as found.
int GradientSeedsChild(const std::string& out, int per_kernel) {
  const std::string progress_path = out + "/" + kProgressName;
  nlohmann::json progress = ReadProgress(progress_path);
  const std::string only = absl::GetFlag(FLAGS_only);
  // A kernel stuck in a loop cannot be interrupted: the watchdog ends the
  // process and the supervisor names the op.
  const int64_t timeout_ms = 1000 * int64_t{std::max(1, absl::GetFlag(FLAGS_probe_timeout))};
  // Static: the detached watchdog outlives this frame while the process exits.
  static std::atomic<int64_t> deadline{0};  // NowMs(); 0: no op running
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t d = deadline.load();
      if (d != 0 && NowMs() > d) _exit(kHangExit);
    }
  }).detach();
  for (const ops::OpSpec& spec : ops::Catalogue()) {
    const std::string op = spec.Qualified();
    if ((!only.empty() && op.find(only) == std::string::npos) || progress["done"].contains(op) ||
        progress["failed"].contains(op) || !Differentiable(spec)) {
      continue;
    }
    progress["current"] = op;
    if (!WriteProgress(progress_path, progress)) return 2;
    deadline = NowMs() + timeout_ms;
    int tries = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      mutators::GenerateOptions options;
      options.op = op;
      options.max_nodes = 2;
      options.grad_share = 1;
      const graph::Program p = mutators::Generate(seed * 7919 + op.size(), options);
      if (p.nodes.empty()) break;
      ++tries;
      const std::string grad_fn = BackwardOnCpu(p, op);
      if (grad_fn.empty()) continue;
      nlohmann::json& dtypes = progress["written"][grad_fn];
      if (!dtypes.is_object()) dtypes = nlohmann::json::object();
      if (static_cast<int>(dtypes.size()) >= per_kernel) break;
      // One program per (kernel, dtype): the dtypes are where backwards part.
      std::string dtype;
      for (const graph::Input& in : p.inputs) {
        if (graph::IsFloating(in.type.dtype)) {
          dtype = std::string(graph::DTypeName(in.type.dtype));
          break;
        }
      }
      if (dtype.empty() || dtypes.contains(dtype)) continue;
      const std::string path = absl::StrCat(out, "/", grad_fn, "-", dtype, ".dfz");
      std::string text = graph::PrintProgram(p);
      text.insert(text.find('\n') + 1,
                  absl::StrCat("# Seed for ", grad_fn, " (the backward of ", op,
                               "), written by `divfuzz seeds --gradients` (runs forward and "
                               "backward on the CPU).\n"));
      if (absl::Status s = store::WriteFileAtomically(path, text); !s.ok()) {
        std::cerr << "divfuzz seeds: " << s.message() << "\n";
        return 2;
      }
      dtypes[dtype] = op;
    }
    deadline = 0;
    progress["done"][op] = tries;
    progress.erase("current");
    if (!WriteProgress(progress_path, progress)) return 2;
  }
  return 0;
}

// Runs the child until it has been through every op; an op whose programs
// kill the child is recorded as failed and the next child goes on without it.
int GradientSeeds(const std::string& out, int per_kernel) {
  if (std::getenv(kChildEnv) != nullptr) return GradientSeedsChild(out, per_kernel);
  const std::string progress_path = out + "/" + kProgressName;
  const std::vector<std::string> args = OwnCommandLine();
  for (;;) {
    SpawnOptions options;
    options.env[kChildEnv] = "1";
    const pid_t pid = SpawnSelf(args, options);
    if (pid < 0) {
      std::cerr << "divfuzz seeds: fork failed\n";
      return 2;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    nlohmann::json progress = ReadProgress(progress_path);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    const std::string current = progress.value("current", "");
    const bool hung = WIFEXITED(status) && WEXITSTATUS(status) == kHangExit;
    if (current.empty() || (WIFEXITED(status) && !hung)) {
      std::cerr << "divfuzz seeds: the child process failed (status " << status
                << "); its progress is in " << progress_path << "\n";
      return 2;
    }
    const std::string why =
        hung ? absl::StrCat("hung (over --probe_timeout=", absl::GetFlag(FLAGS_probe_timeout),
                            " s)")
             : absl::StrCat("killed the process (signal ", WTERMSIG(status), ")");
    std::cerr << "divfuzz seeds: trying " << current << " " << why << "; going on without it\n";
    progress["failed"][current] = why;
    progress.erase("current");
    if (!WriteProgress(progress_path, progress)) return 2;
  }
  const nlohmann::json progress = ReadProgress(progress_path);
  // Done: the folder holds programs only (a campaign reads every file in it).
  std::remove(progress_path.c_str());
  if (progress["done"].empty() && progress["failed"].empty()) {
    std::cerr << "divfuzz seeds: no differentiable catalogue op"
              << (absl::GetFlag(FLAGS_only).empty()
                      ? std::string()
                      : absl::StrCat(" matches --only=", absl::GetFlag(FLAGS_only)))
              << "\n";
    return 1;
  }
  size_t files = 0;
  for (const auto& [kernel, dtypes] : progress["written"].items()) files += dtypes.size();
  std::cout << "divfuzz seeds: " << files << " programs for " << progress["written"].size()
            << " backward kernels from " << progress["done"].size() << " ops in " << out << "/";
  if (!progress["failed"].empty()) {
    std::cout << "; " << progress["failed"].size() << " ops crashed or hung:";
    for (const auto& [op, why] : progress["failed"].items()) std::cout << " " << op;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

int RunSeeds(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "divfuzz seeds: unexpected argument '" << args[0] << "' (use --out=DIR)\n";
    return 2;
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  const int per_family = absl::GetFlag(FLAGS_per_family);
  if (out.empty() || per_family < 1) {
    std::cerr << "divfuzz seeds: needs --out=DIR and --per_family >= 1\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::cerr << "divfuzz seeds: cannot create " << out << ": " << ec.message() << "\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_gradients)) return GradientSeeds(out, per_family);
  std::set<std::string> families;
  for (const ops::OpSpec& s : ops::Catalogue()) families.insert(std::string(s.family));
  int written = 0, missing = 0;
  for (const std::string& family : families) {
    int made = 0;
    for (uint64_t seed = 1; seed <= 200 && made < per_family; ++seed) {
      mutators::GenerateOptions options;
      options.family = family;
      options.max_nodes = 3;
      const graph::Program p = mutators::Generate(seed * 7919 + family.size(), options);
      if (p.nodes.empty()) break;
      if (!RunsOnCpu(p, family)) continue;
      const std::string path = absl::StrCat(out, "/", family, "-", ++made, ".dfz");
      std::string text = graph::PrintProgram(p);
      // A comment after the header line says where the file came from.
      text.insert(text.find('\n') + 1,
                  absl::StrCat("# Seed for the '", family,
                               "' family, written by `divfuzz seeds` (runs on the CPU).\n"));
      if (absl::Status s = store::WriteFileAtomically(path, text); !s.ok()) {
        std::cerr << "divfuzz seeds: " << s.message() << "\n";
        return 2;
      }
      ++written;
    }
    if (made == 0) {
      ++missing;
      std::cerr << "divfuzz seeds: no runnable program for family '" << family << "'\n";
    }
  }
  std::cout << "divfuzz seeds: " << written << " programs for " << families.size() - missing
            << " of " << families.size() << " families in " << out << "/\n";
  return missing == 0 ? 0 : 1;
}

}  // namespace divfuzz::fuzz
