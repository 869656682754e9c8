// divfuzz campaign: the command. Reads the flags into the campaign's settings
// (or a stopped campaign's, with --resume), checks the folders it will write,
// starts the MPS server and hands over to the supervisor (campaign/supervisor.h).
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "exec/cuda_variants.h"
#include "exec/executor.h"
#include "fuzz/campaign/fail_on.h"
#include "fuzz/campaign/gpu_groups.h"
#include "fuzz/campaign/mps_server.h"
#include "fuzz/campaign/preflight.h"
#include "fuzz/campaign/state.h"
#include "fuzz/campaign/supervisor.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/cli/given_flags.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "oracles/policy.h"
#include "store/baseline.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The CUDA_VISIBLE_DEVICES value of each worker slot: `per_gpu` workers on
// every device this process may use.
absl::StatusOr<std::vector<std::string>> GpuSlots(int per_gpu) {
  std::vector<std::string> devices;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr && *v != '\0') {
    for (absl::string_view d : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      devices.emplace_back(d);
    }
  }
  const int count = exec::CudaDeviceCount();
  if (count == 0) {
    return absl::FailedPreconditionError("the targets name cuda, but no CUDA device is visible");
  }
  if (devices.empty()) {
    for (int i = 0; i < count; ++i) devices.push_back(std::to_string(i));
  }
  devices.resize(std::min<size_t>(devices.size(), count));
  std::vector<std::string> slots;
  for (const std::string& d : devices) {
    for (int i = 0; i < per_gpu; ++i) slots.push_back(d);
  }
  return slots;
}

// A fresh campaign in a folder that held one: its corpus is reused, its
// statistics move aside so they are neither lost nor counted again.
void SetAsidePreviousCampaign(const std::string& work) {
  if (!fs::exists(work + "/campaign.json")) return;
  std::string stamp = UtcNow();  // no ':' in a folder name
  stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
  const std::string aside = absl::StrCat(work, "/previous-", stamp);
  std::error_code ec;
  fs::create_directories(aside, ec);
  for (const char* name : {"campaign.json", "state.json", "stats.csv", "logs"}) {
    if (fs::exists(fs::path(work) / name))
      fs::rename(fs::path(work) / name, fs::path(aside) / name, ec);
  }
  std::cout << "divfuzz campaign: " << work << " held an earlier campaign; its corpus is reused, "
            << "its statistics moved to " << aside << "/\n";
}

absl::StatusOr<CampaignConfig> ConfigFromFlags() {
  CampaignConfig c;
  CampaignSettingsFromFlags(&c);  // then resolved, checked and made absolute below
  const int64_t budget = int64_t{absl::GetFlag(FLAGS_hours)} * 3600 +
                         int64_t{absl::GetFlag(FLAGS_minutes)} * 60 + absl::GetFlag(FLAGS_seconds);
  if (absl::GetFlag(FLAGS_hours) < 0 || absl::GetFlag(FLAGS_minutes) < 0 ||
      absl::GetFlag(FLAGS_seconds) < 0 || budget > 30 * 24 * 3600) {
    return absl::InvalidArgumentError(
        "--hours, --minutes and --seconds must be non-negative and add up to at most 30 days");
  }
  c.budget_seconds = budget == 0 ? 60 : static_cast<int>(budget);
  c.targets = ResolveTargets(c.targets);
  if (absl::Status runnable = CheckTargetsRunnable("--targets", c.targets); !runnable.ok()) {
    return runnable;
  }
  if (absl::StatusOr<std::string> rotated = exec::RotatedTargets(c.targets, c.cuda_variants, 0);
      !rotated.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cuda_variants: ", rotated.status().message()));
  }
  const int per = absl::GetFlag(FLAGS_workers);
  if (per < 1 || per > 256) return absl::InvalidArgumentError("--workers must be 1 to 256");
  if (absl::GetFlag(FLAGS_threads) < 0) {
    return absl::InvalidArgumentError("--threads must be 0 (share the cores) or more");
  }
  if (absl::StrContains(c.targets, "cuda")) {
    absl::StatusOr<std::vector<std::string>> slots = GpuSlots(per);
    if (!slots.ok()) return slots.status();
    c.gpus = *slots;
    c.workers = static_cast<int>(c.gpus.size());
  } else {
    c.workers = per;
  }
  std::error_code ec;
  c.findings = fs::absolute(c.findings, ec).string();
  for (absl::string_view part :
       absl::StrSplit(absl::GetFlag(FLAGS_corpus), ',', absl::SkipEmpty())) {
    const std::string dir(part);
    if (fs::is_directory(dir)) {
      c.seeds.push_back(fs::absolute(dir, ec).string());
    } else {
      std::cerr << "divfuzz campaign: seed corpus folder " << dir << " does not exist; skipped\n";
    }
  }
  if (!c.policy.empty()) {
    if (absl::StatusOr<oracles::Policy> p = oracles::LoadPolicy(c.policy); !p.ok()) {
      return p.status();
    }
    c.policy = fs::absolute(c.policy, ec).string();
  }
  if (!c.baseline.empty()) {
    // A bad id file fails here, with its file:line, before anything runs.
    if (absl::StatusOr<store::Baseline> b = store::LoadBaseline(c.baseline); !b.ok()) {
      return b.status();
    }
    c.baseline = fs::absolute(c.baseline, ec).string();
  }
  if (c.timeout < 1 || c.rss_limit_mb < 0 || c.memory_budget_mb < 1) {
    return absl::InvalidArgumentError(
        "--timeout and --memory_budget_mb must be positive, --rss_limit_mb non-negative");
  }
  if (c.variants < 1 || c.variants > 1024) {
    return absl::InvalidArgumentError("--variants must be 1 to 1024");
  }
  if (!(c.grad_share >= 0 && c.grad_share <= 1)) {
    return absl::InvalidArgumentError("--grad_share must be 0 to 1");
  }
  if (!(c.isolated_share >= 0 && c.isolated_share <= 1)) {
    return absl::InvalidArgumentError("--isolated_share must be 0 to 1");
  }
  if (c.isolated_timeout < 1) return absl::InvalidArgumentError("--isolated_timeout must be 1 or more");
  // --plugins was copied into DIVFUZZ_PLUGINS at start-up; the variable
  // alone may name them too.
  if (const char* p = std::getenv("DIVFUZZ_PLUGINS"); p != nullptr) c.plugins = p;
  c.started = UtcNow();
  return c;
}

// Flags that --resume takes: more time, and what only concerns this run.
// Everything else is the campaign's, kept in campaign.json.
// The flags --resume accepts besides itself: the budget, what the end of
// the campaign does and how replacement workers start; every other setting
// is campaign.json's.
const std::vector<std::string>& ResumeFlags() {
  static const auto* flags =
      new std::vector<std::string>{"hours",      "minutes",    "seconds",
                                   "fail_on",    "repro_jobs", "restart_sample"};
  return *flags;
}

// campaign.json and state.json of the folder to resume; a lost or corrupt
// state.json is rebuilt (a corrupt one kept as state.json.corrupt).
absl::Status LoadForResume(const std::string& work, CampaignConfig* config, CampaignState* state) {
  absl::StatusOr<CampaignConfig> c = LoadConfig(work);
  if (!c.ok()) return c.status();
  *config = *std::move(c);
  std::vector<std::string> refused;
  const std::vector<std::string>& allowed = ResumeFlags();
  for (const std::string& name : GivenFlags()) {
    if (name != "resume" && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      refused.push_back("--" + name);
    }
  }
  if (!refused.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resume=", work, " continues with the settings in ", work, "/campaign.json; ",
        absl::StrJoin(refused, ", "), " cannot be changed (with --resume only --",
        absl::StrJoin(allowed, ", --"),
        " apply; start a new campaign with --work=NEW for other settings)"));
  }
  const std::string state_path = work + "/state.json";
  absl::StatusOr<CampaignState> s =
      fs::exists(state_path) ? LoadState(work) : absl::NotFoundError("missing");
  if (s.ok()) {
    *state = *std::move(s);
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(s.status())) {
    std::error_code ec;
    fs::rename(state_path, state_path + ".corrupt", ec);
    std::cout << "divfuzz campaign: " << s.status().message() << "; kept as " << state_path
              << ".corrupt\n";
  }
  *state = RebuildState(work, *config);
  std::cout << "divfuzz campaign: " << state_path << " was "
            << (absl::IsNotFound(s.status()) ? "missing" : "corrupt")
            << "; rebuilt from stats.csv, logs/, crashes/ and the findings store: "
            << static_cast<int>(state->elapsed_seconds) << " s used, " << state->generations
            << " worker generation(s), " << state->quarantine.size() << " quarantined op(s)\n";
  return absl::OkStatus();
}

// --hours + --minutes + --seconds in seconds; -1 when none is given; an
// error when negative or over 30 days.
absl::StatusOr<int64_t> ExtraSeconds() {
  const bool given =
      GivenFlags().count("hours") || GivenFlags().count("minutes") || GivenFlags().count("seconds");
  const int64_t h = absl::GetFlag(FLAGS_hours), m = absl::GetFlag(FLAGS_minutes),
                s = absl::GetFlag(FLAGS_seconds);
  if (h < 0 || m < 0 || s < 0 || h * 3600 + m * 60 + s > 30 * 24 * 3600) {
    return absl::InvalidArgumentError(
        "--hours, --minutes and --seconds must be non-negative and add up to at most 30 days");
  }
  return given ? h * 3600 + m * 60 + s : -1;
}

}  // namespace

int RunCampaign(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "divfuzz campaign: unexpected argument '" << args[0]
              << "' (it takes flags only)\n";
    return kExitCannotRun;
  }
  absl::StatusOr<FailOn> fail_on = ParseFailOn(absl::GetFlag(FLAGS_fail_on));
  if (!fail_on.ok()) {
    std::cerr << "divfuzz campaign: " << fail_on.status().message() << "\n";
    return kExitCannotRun;
  }
  const std::string resume = absl::GetFlag(FLAGS_resume);
  const std::string work = resume.empty() ? absl::GetFlag(FLAGS_work) : resume;
  const std::string work_flag = resume.empty() ? "--work" : "--resume";
  CampaignConfig config;
  CampaignState state;
  if (!resume.empty()) {
    if (absl::Status s = LoadForResume(work, &config, &state); !s.ok()) {
      std::cerr << "divfuzz campaign: --resume: " << s.message() << "\n";
      return kExitCannotRun;
    }
    absl::StatusOr<int64_t> extra = ExtraSeconds();
    if (!extra.ok()) {
      std::cerr << "divfuzz campaign: " << extra.status().message() << "\n";
      return kExitCannotRun;
    }
    if (*extra > 0) {
      // More time: from where the campaign is, finished or not.
      config.budget_seconds = static_cast<int>(state.elapsed_seconds) + static_cast<int>(*extra);
      std::cout << "divfuzz campaign: budget extended by " << *extra << " s to "
                << config.budget_seconds << " s\n";
    } else if (state.elapsed_seconds + 1 > config.budget_seconds) {
      std::cerr << "divfuzz campaign: --resume=" << work << ": the campaign has used its whole "
                << "budget (" << config.budget_seconds << " s); to run it longer, add "
                << "--seconds=N, --minutes=N or --hours=N (that much more time)\n";
      return kExitCannotRun;
    }
    if (absl::Status s = CheckTargetsRunnable(work + "/campaign.json targets", config.targets);
        !s.ok()) {
      std::cerr << "divfuzz campaign: --resume: " << s.message() << "\n";
      return kExitCannotRun;
    }
    ++state.resumes;
    // The repro jobs read these flags; they follow the campaign's settings.
    absl::SetFlag(&FLAGS_policy, config.policy);
    absl::SetFlag(&FLAGS_tf32, config.tf32);
    if (!config.plugins.empty()) setenv("DIVFUZZ_PLUGINS", config.plugins.c_str(), 1);
  } else {
    absl::StatusOr<CampaignConfig> c = ConfigFromFlags();
    if (!c.ok()) {
      std::cerr << "divfuzz campaign: " << c.status().message() << "\n";
      return kExitCannotRun;
    }
    config = *std::move(c);
  }
  // Before anything is written: a store that cannot take findings would
  // otherwise lose every one of them while the campaign runs its budget.
  for (const absl::Status& s :
       {CheckWritableFolder(work_flag, work, /*lock=*/false),
        CheckWritableFolder("--findings", config.findings, /*lock=*/true)}) {
    if (!s.ok()) {
      std::cerr << "divfuzz campaign: " << s.message() << "\n";
      return kExitCannotRun;
    }
  }
  ReportCorruptIndexLines(config.findings, "campaign");
  if (!resume.empty()) {
    TrimPartialCsvRow(work + "/stats.csv");
    std::cout << "divfuzz campaign: resuming " << work << " at "
              << static_cast<int>(state.elapsed_seconds) << " s of " << config.budget_seconds
              << " s\n";
  } else {
    SetAsidePreviousCampaign(work);
  }
  std::error_code ec;
  for (const char* sub : {"corpus", "crashes", "logs"}) {
    fs::create_directories(fs::path(work) / sub, ec);
  }
  if (ec) {
    std::cerr << "divfuzz campaign: cannot create " << work << ": " << ec.message() << "\n";
    return kExitCannotRun;
  }
  if (absl::Status s = SaveConfig(work, config); !s.ok()) {
    std::cerr << "divfuzz campaign: " << s.message() << "\n";
    return kExitCannotRun;
  }
  std::cout << "divfuzz campaign: " << config.budget_seconds << " s, targets " << config.targets
            << ", " << config.workers << " worker(s)"
            << (config.gpus.empty() ? ""
                                    : absl::StrCat(" on GPU(s) ", absl::StrJoin(config.gpus, ",")))
            << ", findings " << config.findings << "/, work " << work << "/"
            << (fail_on->max_order >= 0 ? ", fail_on=" + fail_on->name : "") << "\n";
  const bool uses_cuda = absl::StrContains(config.targets, "cuda");
  std::vector<MpsServer> servers;
  const std::vector<GpuGroup> groups = GroupSlotsByGpu(config.gpus);
  const char* theirs = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  if (uses_cuda && groups.size() > 1 && absl::GetFlag(FLAGS_mps) != "off" &&
      (theirs == nullptr || *theirs == '\0')) {
    // One server a GPU: a fault on one stops only that GPU's workers.
    for (const GpuGroup& g : groups) {
      absl::StatusOr<MpsServer> mps = MpsServer::Start(absl::GetFlag(FLAGS_mps), work, true, g.gpu);
      if (!mps.ok()) {
        std::cerr << "divfuzz campaign: " << mps.status().message() << "\n";
        return kExitCannotRun;
      }
      if (!mps->description().empty()) {
        std::cout << "divfuzz campaign: " << mps->description() << "\n";
      }
      servers.push_back(*std::move(mps));
    }
  } else {
    absl::StatusOr<MpsServer> mps = MpsServer::Start(absl::GetFlag(FLAGS_mps), work, uses_cuda);
    if (!mps.ok()) {
      std::cerr << "divfuzz campaign: " << mps.status().message() << "\n";
      return kExitCannotRun;
    }
    if (!mps->description().empty()) std::cout << "divfuzz campaign: " << mps->description() << "\n";
    // Workers, reducers and replays inherit it, as OMP_NUM_THREADS.
    if (mps->running()) setenv("CUDA_MPS_PIPE_DIRECTORY", mps->pipe_dir().c_str(), 1);
    servers.push_back(*std::move(mps));
  }
  return SuperviseCampaign(work, std::move(config), std::move(state), *std::move(fail_on),
                           std::move(servers));
}

}  // namespace divfuzz::fuzz
