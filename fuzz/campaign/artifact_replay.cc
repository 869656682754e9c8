#include "fuzz/campaign/artifact_replay.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fuzz/harness/crash_hang_triage.h"
#include "fuzz/harness/harness.h"
#include "fuzz/harness/inflight.h"
#include "fuzz/campaign/spawn.h"
#include "graph/gradient.h"
#include "graph/printer.h"
#include "minimize/emit_python.h"
#include "mutators/value_variants.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

struct Replay : WatchedRun {
  std::string other_failed;   // target "both": how the other side failed on its own run
  bool slow = false;          // hung once, then finished within four times the timeout
};




Replay LocateIn(const ArtifactContext& c, const std::string& artifact, const std::string& targets,
                const std::string& out, int timeout_seconds) {
  Replay r;
  static_cast<WatchedRun&>(r) = RunAnnouncingNodes(
      {"divfuzz", "locate", absl::StrCat("--targets=", targets),
       absl::StrCat("--variants=", c.variants), artifact},
      out, c.outside_mps, timeout_seconds, c.out_of_time);
  return r;
}

// The second target crashed after the first ran through. A kernel that
// writes out of bounds may only be caught later, in the other target's run
// (session 50's GridSampler2DBackward0 33997877: the CPU's float32 backward
// crashes alone in 3 runs of 3, and cpu-f64 was blamed). So each target runs
// twice on its own in a fresh process: the first crashing so is the faulty
// one, or both are; where the first does not, the second is as it was.
Replay SecondTargetCrashed(const ArtifactContext& c, const std::string& artifact,
                           const std::vector<std::string>& pair, Replay r) {
  const Replay first = LocateIn(c, artifact, absl::StrCat(pair[0], ",", pair[0]),
                                artifact + ".locate-first.log", c.timeout_seconds);
  if (first.cut) return first;
  if (!first.crashed || first.target != pair[0]) return r;
  const Replay second = LocateIn(c, artifact, absl::StrCat(pair[1], ",", pair[1]),
                                 artifact + ".locate-second.log", c.timeout_seconds);
  if (second.cut) return second;
  if (second.crashed && second.target == pair[1]) {
    r.target = "both";
    r.other_failed = "crash";
    return r;
  }
  return first;
}

// The float64 witness of a target: cpu-f64 for the CPU's kernels, cuda-f64
// for CUDA's ("" for one already float64).
std::string Float64Of(const std::string& target) {
  if (absl::StartsWith(target, "cuda-f64") || target == "cpu-f64") return "";
  if (absl::StartsWith(target, "cuda")) return "cuda-f64";
  return "cpu-f64";
}

// A worker can die judging, in a float64 witness of the pair (session 52's
// 4c45624b: the CPU's float64 grid_sampler backward writing through an index
// cast from inf, filed as "<unknown>, did not recur"): where the pair ran
// through, their float64 witnesses run as targets in a fresh process, and
// a failure there names the witness (cpu-f64: the CPU's kernel in float64).
Replay Float64Targets(const ArtifactContext& c, const std::string& artifact,
                      const std::vector<std::string>& pair, Replay r) {
  std::vector<std::string> wide;
  for (const std::string& t : pair) {
    const std::string w = Float64Of(t);
    if (!w.empty() && std::find(wide.begin(), wide.end(), w) == wide.end()) wide.push_back(w);
  }
  if (wide.empty()) return r;
  if (wide.size() == 1) wide.push_back(wide[0]);
  const Replay f64 = LocateIn(c, artifact, absl::StrJoin(wide, ","), artifact + ".locate-f64.log",
                              c.timeout_seconds);
  if (f64.cut || (f64.crashed && !f64.target.empty())) return f64;
  return r;
}

// Locate runs the pair's targets one after the other, so a hang or crash on
// the first says nothing of the second: the second then runs first in a
// fresh process. If it fails too, both sides fail; if not, the first is the
// one (a CUDA fault needs no second run: it names its own side).
Replay Locate(const ArtifactContext& campaign, const std::string& artifact) {
  // The dying worker's own targets, where its CUDA side carried switches.
  ArtifactContext c = campaign;
  if (const std::string own = ArtifactTargets(artifact); !own.empty()) c.targets = own;
  Replay r = LocateIn(c, artifact, c.targets, artifact + ".locate.log", c.timeout_seconds);
  if (r.cut) return r;
  if (r.hung) {
    // A node slow only on a loaded machine (a jiterator kernel compiled on
    // its first call in a fresh process, beside busy workers) is not a hang:
    // it must also run past four times the timeout.
    const Replay again =
        LocateIn(c, artifact, c.targets, artifact + ".locate-again.log", 4 * c.timeout_seconds);
    if (again.cut) return again;
    if (!again.hung) {
      if (again.crashed) return again;
      r.hung = false;
      r.slow = true;
      return r;
    }
  }
  std::vector<std::string> pair = absl::StrSplit(c.targets, ',');
  if (!(r.hung || r.crashed)) return Float64Targets(c, artifact, pair, r);
  if (r.cuda_fault || pair.size() != 2 || pair[0] == pair[1]) return r;
  if (r.target == pair[1] && r.crashed) return SecondTargetCrashed(c, artifact, pair, r);
  if (r.target != pair[0]) return r;
  const Replay other = LocateIn(c, artifact, absl::StrCat(pair[1], ",", pair[0]),
                                artifact + ".locate-other.log", c.timeout_seconds);
  if (other.cut) return other;
  if ((other.hung || other.crashed) && other.target == pair[1] && other.batched == r.batched) {
    r.target = "both";
    r.other_failed = other.hung ? "hang" : "crash";
  }
  return r;
}

// The first op of `program` in `quarantine` ("" when none).
std::string QuarantinedOp(const graph::Program& program, const std::set<std::string>& quarantine) {
  for (const graph::Node& n : program.nodes) {
    if (quarantine.count(n.QualifiedName())) return n.QualifiedName();
  }
  return "";
}

// Artifacts in crashes_dir not in `seen`, as paths.
std::vector<std::string> Unhandled(const std::string& crashes_dir,
                                   const std::set<std::string>& seen) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(crashes_dir, ec)) {
    const std::string name = entry.path().filename().string();
    // A write under way (SaveInflightArtifact's) is no artifact yet: on the
    // H100 one was replayed as an empty input.
    const bool artifact = KillerArtifact(name) || (absl::StartsWith(name, "slow-unit-") &&
                                                   !absl::StrContains(name, store::kAtomicWriteInfix));
    if (!artifact || absl::EndsWith(name, ".log") || seen.count(name)) continue;
    paths.push_back(entry.path().string());
  }
  return paths;
}

}  // namespace

WatchedRun RunAnnouncingNodes(const std::vector<std::string>& args, const std::string& out,
                              bool outside_mps, int timeout_seconds,
                              const std::function<bool()>& out_of_time,
                              const std::map<std::string, std::string>& env) {
  WatchedRun r;
  SpawnOptions options{env, out, /*append_log=*/false, {}};
  // Away from the campaign's MPS server: a fault there reaches every worker,
  // and a kernel that hangs there stalls them all.
  if (outside_mps) options.unset = {"CUDA_MPS_PIPE_DIRECTORY", "DIVFUZZ_ON_MPS"};
  const pid_t pid = SpawnSelf(args, options);
  if (pid < 0) {
    r.exit_code = 127;
    return r;
  }
  // A hang is one node running past the timeout: the clock restarts at every
  // "RUN" line the child prints, and process start-up (loading libtorch, which
  // takes seconds on a loaded machine) gets a minute of its own.
  using Clock = std::chrono::steady_clock;
  auto since = Clock::now();
  auto allowed = std::chrono::seconds(60);
  std::uintmax_t seen_size = 0;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(out, ec);
    if (!ec && size != seen_size) {
      seen_size = size;
      const std::string text = ReadBytes(out).value_or("");
      const size_t run = text.rfind("RUN "), judge = text.rfind("JUDGE\n");
      if (run != std::string::npos || judge != std::string::npos) {
        since = Clock::now();
        // Judging (witnesses, exact references) is no kernel under test.
        const bool judging = judge != std::string::npos && (run == std::string::npos || judge > run);
        allowed = std::chrono::seconds(judging ? std::max(60, 4 * timeout_seconds) : timeout_seconds);
      }
    }
    if (out_of_time && out_of_time()) {
      r.cut = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return r;
    }
    if (Clock::now() - since > allowed) {
      r.hung = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!r.hung && WIFSIGNALED(status)) {
    r.crashed = true;
    r.signal = WTERMSIG(status);
  }
  if (!r.hung && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  std::ifstream log(out);
  std::map<std::pair<std::string, int>, std::string> triggers;  // INPUTS lines
  for (std::string line; std::getline(log, line);) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() == 2 && parts[0] == "BATCH") {
      r.batched = true;  // node numbers from here on are the batched program's
      triggers.clear();
      continue;
    }
    if (parts.size() == 4 && parts[0] == "INPUTS") {
      triggers[{parts[1], std::atoi(parts[2].c_str())}] = parts[3];
      continue;
    }
    if (parts.size() == 1 && parts[0] == "JUDGE") {
      r.judging = true;
      continue;
    }
    if (parts.size() == 4 && parts[0] == "BACKWARD") {
      // Only inside the node the last RUN line named (not the judging's reruns).
      if (!r.judging && parts[1] == r.target && std::atoi(parts[2].c_str()) == r.node) {
        r.backward = parts[3];
      }
      continue;
    }
    if (parts.size() != 4 || (parts[0] != "RUN" && parts[0] != "CUDA_FATAL")) continue;
    r.judging = false;
    r.target = parts[1];
    r.node = std::atoi(parts[2].c_str());
    r.op = parts[3];
    if (parts[0] == "RUN") r.backward.clear();
    if (parts[0] == "CUDA_FATAL") {
      r.crashed = r.cuda_fault = true;
      break;
    }
  }
  if (auto it = triggers.find({r.target, r.node}); it != triggers.end()) r.input_trigger = it->second;
  return r;
}

void WriteFailureReproPy(store::FindingsStore& store, const std::string& id,
                         const graph::Program& program, const store::FindingHit& hit,
                         const std::string& targets, int node, const std::string& failed_target,
                         int timeout_seconds) {
  minimize::ReproSpec spec;
  std::vector<std::string> pair = absl::StrSplit(targets, ',');
  if (pair.size() == 2) spec.target_a = pair[0], spec.target_b = pair[1];
  spec.node_index = node;
  spec.title = absl::StrCat(hit.root_op, ": ", hit.divergence_class, " on ", hit.wrong_side);
  // Runs the failing side in a child process, so the script itself
  // neither hangs nor dies (divfuzz repro replaces it with a minimal one).
  if (!failed_target.empty()) {
    spec.failure = hit.divergence_class;
    spec.failure_target = failed_target == "both" && pair.size() == 2 ? pair[0] : failed_target;
    spec.hang_seconds = timeout_seconds;
  }
  (void)store.WriteArtifact(id, "repro.py", minimize::EmitPython(program, spec), "repro_py");
}

int UnhandledArtifacts(const std::string& crashes_dir, const std::set<std::string>& seen) {
  return static_cast<int>(Unhandled(crashes_dir, seen).size());
}

int RecordNewArtifacts(const ArtifactContext& c, std::set<std::string>* seen,
                       std::set<std::string>* quarantine) {
  std::vector<std::string> fresh = Unhandled(c.crashes_dir, *seen);
  for (const std::string& path : fresh) seen->insert(fs::path(path).filename().string());
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> store =
      store::FindingsStore::Open(c.findings_dir);
  if (!store.ok()) return 0;
  int recorded = 0;
  for (const std::string& path : fresh) {
    const std::string data = ReadBytes(path).value_or("");
    if (FailedWrite(path, data)) {
      std::cout << "divfuzz campaign: " << path
                << " is empty: libFuzzer's handler never wrote the input (the worker's in-flight"
                   " record keeps it); not a finding\n";
      continue;
    }
    graph::Program program =
        ProgramFromBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    // Workers that started before an op's quarantine reached them die on its
    // mutants: a replay of each (a minute for a hang) would tell nothing new.
    const std::string known = QuarantinedOp(program, *quarantine);
    if (!known.empty()) {
      std::cout << "divfuzz campaign: " << path << " uses " << known
                << ", already quarantined; not replayed\n";
      continue;
    }
    // Past the deadline: left for the next pass (the campaign counts them).
    if (c.out_of_time()) {
      seen->erase(fs::path(path).filename().string());
      continue;
    }
    const Replay r = Locate(c, path);
    if (r.cut) {
      seen->erase(fs::path(path).filename().string());
      std::cout << "divfuzz campaign: " << path
                << " was being replayed when the campaign stopped; a resumed campaign replays it\n";
      continue;
    }
    if (const std::string why = WhyNotAFinding(path, r.hung, r.crashed, c.outside_mps);
        !why.empty()) {
      std::cout << "divfuzz campaign: " << path << " " << why << "; not a finding\n";
      continue;
    }
    const bool timeout_artifact = absl::StrContains(path, "/timeout-");
    const bool hang = r.hung || (!r.crashed && timeout_artifact);
    const bool reproduced = r.hung || r.crashed;
    absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
    // Failed only with its value variants: the batched program (an ordinary
    // program, as locate ran it) is the finding, so its repro reproduces.
    if (r.batched && types.ok()) {
      absl::StatusOr<mutators::VariantBatch> batch =
          mutators::BatchVariants(program, *types, c.variants - 1);
      if (batch.ok()) {
        program = std::move(batch->program);
        types = std::move(batch->types);
      }
    }
    // A replay that ran to its end says nothing about where the worker died:
    // its last "RUN" line is merely the program's last node (run G filed
    // three unrelated crashes under autograd::grad on cuda). Such a failure
    // is filed unlocated, with what the replay last ran kept as a detail.
    store::FindingHit hit =
        reproduced ? FailureHit(program, types.ok() ? &*types : nullptr, r.node,
                                r.backward.empty() ? r.op : r.backward,
                                hang ? "hang" : "crash", r.target, r.cuda_fault, reproduced,
                                r.input_trigger)
                   : FailureHit(program, types.ok() ? &*types : nullptr, -1, "", hang ? "hang" : "crash",
                                "", r.cuda_fault, reproduced, r.input_trigger);
    if (!reproduced && !r.op.empty()) {
      hit.detail["replay_ran_to"] = absl::StrCat(r.op, " (node ", r.node, ") on ", r.target);
    }
    hit.targets = c.targets;
    hit.detail["artifact"] = path;
    hit.detail["reproduced"] = reproduced;
    hit.detail["signal"] = r.signal;
    if (r.slow) hit.detail["slow_not_hung"] = true;
    if (r.batched) hit.detail["value_variants"] = c.variants - 1;
    if (!r.other_failed.empty()) hit.detail["other_side_failed"] = r.other_failed;
    // An op that kills workers again and again would stall the campaign on it.
    // Not a gradient statement: it is the backward of every op before it,
    // and quarantining it would end all gradient fuzzing (session 35's
    // campaign ran 1.9% of its programs with gradients after one crash).
    if ((r.hung || r.crashed) && !r.op.empty() && r.op != graph::kGradOp &&
        quarantine->insert(r.op).second) {
      std::cout << "divfuzz campaign: " << r.op << (r.hung ? " hangs" : " crashes")
                << " reproducibly; later workers skip programs that use it\n";
    }
    absl::StatusOr<store::RecordResult> rec = (*store)->Record(hit, graph::PrintProgram(program));
    if (!rec.ok()) continue;
    ++recorded;
    std::cout << "divfuzz campaign: " << hit.divergence_class << " in " << hit.root_op << " on "
              << hit.wrong_side << (reproduced ? "" : " (did not recur)") << " -> " << rec->id
              << "\n";
    if (rec->is_new && r.node >= 0) {
      WriteFailureReproPy(**store, rec->id, program, hit, c.targets, r.node, r.target,
                          c.timeout_seconds);
    }
  }
  return recorded;
}



}  // namespace divfuzz::fuzz
