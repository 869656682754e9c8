#include "fuzz/cli/cli_common.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "fuzz/flags.h"
#include "graph/parser.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

absl::StatusOr<graph::Program> LoadProgramFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  std::stringstream text;
  text << in.rdbuf();
  return graph::ParseProgram(text.str(), path);
}

std::string ResolveTargets(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (exec::CudaAvailable()) return "cpu,cuda";
  std::cerr << "divfuzz: CUDA is not available; comparing cpu with the cpu-f64 reference\n";
  return "cpu,cpu-f64";
}

absl::Status CheckTargetsRunnable(const std::string& what, const std::string& targets) {
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair = exec::ParseTargetPair(targets);
  if (!pair.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", targets, ": ", pair.status().message()));
  }
  for (const exec::Target t : {pair->first, pair->second}) {
    if ((t == exec::Target::kCuda || t == exec::Target::kCudaF64) && !exec::CudaAvailable()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, "=", targets, ": target ", exec::TargetName(t),
          " cannot run on this machine (no CUDA device is visible); use a GPU "
          "host, or a CPU pair such as cpu,cpu-f64 or cpu,cpu-scalar"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<exec::Target, exec::Target>> TargetPairFromFlag(const std::string& flag,
                                                                         bool runnable_only) {
  const std::string targets = ResolveTargets(flag);
  if (absl::Status s = CheckTargetsRunnable("--targets", targets);
      !s.ok() && (runnable_only || absl::IsInvalidArgument(s))) {
    return absl::Status(s.code(), absl::StrCat("divfuzz: ", s.message()));
  }
  return exec::ParseTargetPair(targets);
}

void ReportCorruptIndexLines(const std::string& findings_dir, const std::string& command) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(findings_dir + "/index.jsonl", ec)) return;
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> store =
      store::FindingsStore::Open(findings_dir);
  if (!store.ok()) return;
  absl::StatusOr<std::vector<std::string>> moved = (*store)->SetAsideCorruptLines();
  if (!moved.ok()) {
    std::cerr << "divfuzz " << command << ": checking " << (*store)->IndexPath()
              << " failed: " << moved.status().message() << "\n";
    return;
  }
  for (const std::string& line : *moved) {
    std::cerr << "divfuzz " << command << ": corrupt index line set aside: " << line << "\n";
  }
}

absl::StatusOr<oracles::Policy> PolicyFromFlags() {
  oracles::Policy policy = oracles::DefaultPolicy();
  if (const std::string p = absl::GetFlag(FLAGS_policy); !p.empty()) {
    absl::StatusOr<oracles::Policy> loaded = oracles::LoadPolicy(p);
    if (!loaded.ok()) return loaded.status();
    policy = *loaded;
  }
  policy.cuda_tf32 = absl::GetFlag(FLAGS_tf32);
  exec::SetCudaMathMode({policy.cuda_tf32, policy.cuda_tf32});
  return policy;
}

absl::Status ReduceOptionsFromFlags(const std::string& targets_flag, minimize::ReduceOptions* o,
                                    bool runnable_only) {
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(targets_flag, runnable_only);
  if (!pair.ok()) return pair.status();
  absl::StatusOr<oracles::Policy> policy = PolicyFromFlags();
  if (!policy.ok()) return policy.status();
  o->target_a = pair->first;
  o->target_b = pair->second;
  o->policy = *policy;
  o->max_seconds = absl::GetFlag(FLAGS_max_seconds);
  if (const std::string sig = absl::GetFlag(FLAGS_signature); !sig.empty()) o->signature = sig;
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_passes), ',', absl::SkipEmpty())) {
    o->passes.emplace_back(p);
  }
  o->log = &std::cerr;
  return absl::OkStatus();
}

std::vector<std::pair<size_t, std::string>> DeclinedNodes(const exec::RunResult& a,
                                                          const exec::RunResult& b) {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i < std::max(a.nodes.size(), b.nodes.size()); ++i) {
    for (const exec::RunResult* r : {&a, &b}) {
      if (i < r->nodes.size() && r->nodes[i].error && r->nodes[i].error->declined) {
        out.emplace_back(i, absl::StrCat("declined: ", r->nodes[i].error->message, "; not run"));
        break;
      }
    }
  }
  return out;
}

}  // namespace divfuzz::fuzz
