#include "fuzz/campaign/isolated_lane.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fuzz/campaign/artifact_replay.h"
#include "fuzz/harness/crash_hang_triage.h"
#include "fuzz/harness/harness.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The oldest queued program ("" when none): first come, first run.
std::string Oldest(const std::string& dir) {
  std::error_code ec;
  std::string best;
  fs::file_time_type best_time;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!absl::EndsWith(name, kLaneSuffix) || absl::StrContains(name, store::kAtomicWriteInfix)) {
      continue;
    }
    std::error_code tec;
    const fs::file_time_type t = fs::last_write_time(it->path(), tec);
    if (tec) continue;
    if (best.empty() || t < best_time || (t == best_time && it->path().string() < best)) {
      best = it->path().string();
      best_time = t;
    }
  }
  return best;
}

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

IsolatedLane::IsolatedLane(LaneContext context)
    : context_(std::move(context)), thread_([this] { Loop(); }) {}

IsolatedLane::~IsolatedLane() { Finish(Clock::now()); }

void IsolatedLane::Finish(Clock::time_point deadline) {
  deadline_ = std::min(deadline_.load(), deadline.time_since_epoch().count());
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

LaneCounts IsolatedLane::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

int IsolatedLane::Queued() const {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(context_.lane_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    n += absl::EndsWith(name, kLaneSuffix) && !absl::StrContains(name, store::kAtomicWriteInfix);
  }
  return n;
}

bool IsolatedLane::OutOfTime() const {
  return Clock::now().time_since_epoch().count() >= deadline_.load();
}

void IsolatedLane::Loop() {
  while (!OutOfTime()) {
    const std::string next = Oldest(context_.lane_dir);
    if (next.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      if (finishing_) break;  // the queue is empty
      cv_.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    Handle(next);
  }
}

void IsolatedLane::Handle(const std::string& path) {
  auto count = [this](int64_t LaneCounts::*field) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(counts_.*field);
  };
  std::error_code ec;
  const std::optional<std::string> text = ReadText(path);
  absl::StatusOr<graph::Program> program =
      text ? graph::ParseProgram(*text, path) : absl::NotFoundError("unreadable");
  absl::StatusOr<ops::TypeEnv> types =
      program.ok() ? ops::InferProgram(*program) : absl::StatusOr<ops::TypeEnv>(program.status());
  if (!types.ok()) {
    std::cout << "divfuzz campaign: isolated lane: " << path
              << " is no program: " << types.status().message() << "; dropped\n";
    fs::remove(path, ec);
    count(&LaneCounts::dropped);
    return;
  }
  for (const graph::Node& n : program->nodes) {
    auto it = failures_by_op_.find(n.QualifiedName());
    if (it != failures_by_op_.end() && it->second >= context_.give_up_after) {
      fs::remove(path, ec);
      count(&LaneCounts::dropped);
      return;
    }
  }
  const uint64_t run = runs_++;
  std::map<std::string, std::string> env = context_.env;
  if (!context_.gpus.empty()) env["CUDA_VISIBLE_DEVICES"] = context_.gpus[run % context_.gpus.size()];
  fs::create_directories(context_.log_dir, ec);
  // The last eight runs' logs are kept.
  const std::string log = absl::StrCat(context_.log_dir, "/isolated-", run % 8, ".log");
  const auto out_of_time = [this] { return OutOfTime(); };
  const WatchedRun first = RunAnnouncingNodes(
      {"divfuzz", "isolated", absl::StrCat("--targets=", context_.targets),
       absl::StrCat("--findings=", context_.findings_dir), path},
      log, /*outside_mps=*/true, context_.timeout_seconds, out_of_time, env);
  if (first.cut) return;  // left queued: a resumed campaign runs it
  if (first.judging && (first.hung || first.crashed)) {
    // Both sides ran; the verdict's own work failed: no kernel under test did.
    std::cout << "divfuzz campaign: isolated lane: " << path << " ran on both sides, then its "
              << "judging " << (first.hung ? "ran too long" : "crashed") << " (log: " << log
              << "); not a finding\n";
    count(&LaneCounts::failed);
    fs::remove(path, ec);
    return;
  }
  if (!first.hung && !first.crashed) {
    if (first.exit_code == 0) {
      count(&LaneCounts::run);
      count(&LaneCounts::clean);
    } else {
      std::cout << "divfuzz campaign: isolated lane: " << path << " could not run (exit "
                << first.exit_code << "; log: " << log << ")\n";
      count(&LaneCounts::failed);
    }
    fs::remove(path, ec);
    return;
  }
  // Confirmed in a second fresh process, the sides swapped: the side the
  // first run never reached runs first.
  const std::vector<std::string> pair = absl::StrSplit(context_.targets, ',');
  const std::string swapped =
      pair.size() == 2 ? absl::StrCat(pair[1], ",", pair[0]) : context_.targets;
  const std::string again_log = absl::StrCat(context_.log_dir, "/isolated-", run % 8, "-again.log");
  const WatchedRun again = RunAnnouncingNodes(
      {"divfuzz", "locate", "--isolated", absl::StrCat("--targets=", swapped), path}, again_log,
      /*outside_mps=*/true, context_.timeout_seconds, out_of_time, env);
  if (again.cut) return;
  const bool reproduced = again.hung || again.crashed;
  const std::string kind = first.hung ? "hang" : "crash";
  std::string target = first.target;
  if (reproduced && !first.cuda_fault && !again.target.empty() && again.target != first.target) {
    target = "both";  // each side failed in a run of its own
  }
  store::FindingHit hit =
      FailureHit(*program, &*types, first.node, first.backward.empty() ? first.op : first.backward,
                 kind, target,
                 first.cuda_fault || again.cuda_fault, reproduced, first.input_trigger);
  hit.targets = context_.targets;
  hit.detail["isolated_lane"] = true;
  hit.detail["reproduced"] = reproduced;
  hit.detail["signal"] = first.signal;
  hit.detail["timeout_seconds"] = context_.timeout_seconds;
  if (target == "both") hit.detail["other_side_failed"] = again.hung ? "hang" : "crash";
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> store =
      store::FindingsStore::Open(context_.findings_dir);
  absl::StatusOr<store::RecordResult> rec =
      store.ok() ? (*store)->Record(hit, graph::PrintProgram(*program))
                 : absl::StatusOr<store::RecordResult>(store.status());
  if (!rec.ok()) {
    // Left queued for a resumed campaign; the lane stops rather than retry.
    std::cout << "divfuzz campaign: isolated lane: recording a " << kind << " of " << path
              << " failed (" << rec.status().message() << "); the lane stops, the program stays "
              << "queued\n";
    deadline_ = Clock::now().time_since_epoch().count();
    return;
  }
  if (rec->is_new && first.node >= 0) {
    WriteFailureReproPy(**store, rec->id, *program, hit, context_.targets, first.node, target,
                        context_.timeout_seconds);
  }
  if (reproduced) ++failures_by_op_[hit.root_op];
  count(&LaneCounts::run);
  count(first.hung ? &LaneCounts::hangs : &LaneCounts::crashes);
  if (!reproduced) count(&LaneCounts::unconfirmed);
  std::cout << "divfuzz campaign: isolated lane: " << kind << " in " << hit.root_op << " on "
            << hit.wrong_side << (reproduced ? "" : " (did not recur)") << " -> " << rec->id
            << "\n";
  fs::remove(path, ec);
}

}  // namespace divfuzz::fuzz
