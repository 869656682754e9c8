// The campaign's supervisor: runs libFuzzer worker processes for a time
// budget (several per GPU, or on the CPU pair), replaces any that die, turns
// what killed them into crash/hang findings, minimizes new buckets beside the
// fuzzing, and keeps enough state in its work folder to resume after kill -9.
#include "fuzz/campaign/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exec/cuda_variants.h"
#include "fuzz/campaign/artifact_replay.h"
#include "fuzz/campaign/artifact_triage.h"
#include "fuzz/campaign/baseline_replay.h"
#include "fuzz/campaign/gpu_groups.h"
#include "fuzz/campaign/isolated_lane.h"
#include "fuzz/campaign/reduction_queue.h"
#include "fuzz/campaign/restart_corpus.h"
#include "fuzz/campaign/spawn.h"
#include "fuzz/campaign/status.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "fuzz/harness/harness.h"
#include "fuzz/harness/inflight.h"
#include "report/report.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long reducers may run past the budget (they had 30 s after the
// workers' end, which took the closing phase 30-60 s past --seconds on the
// H200): a reduction cut short is redone by `divfuzz repro`.
constexpr auto kClosingSeconds = std::chrono::seconds(10);

volatile sig_atomic_t stop_requested = 0;
void RequestStop(int) { stop_requested = 1; }

// libFuzzer's exit codes: 77 after a crash (-error_exitcode), 70 after a
// timeout (-timeout_exitcode); a signal means it could not even report.
std::string DeathReason(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  switch (WEXITSTATUS(status)) {
    case 77:
      return "an input crashed it (exit code 77)";
    case 70:
      return "an input ran past --timeout (exit code 70)";
    case kExitCannotRun:
      return "exit code 2: it could not start (its log says why)";
    case kExitWorkerStoreFailed:
      return "exit code 86: it could not record a finding in the findings store";
    default:
      return absl::StrCat("exit code ", WEXITSTATUS(status), ", e.g. over --rss_limit_mb");
  }
}

class Supervisor {
 public:
  Supervisor(std::string work, CampaignConfig config, CampaignState state, FailOn fail_on,
             std::vector<MpsServer> mps)
      : mps_(std::move(mps)),
        work_(std::move(work)),
        config_(std::move(config)),
        state_(std::move(state)),
        fail_on_(std::move(fail_on)),
        buckets_before_(BucketCounts(config_.findings)),
        baseline_(LoadBaselineOrEmpty(config_.baseline)),
        restarts_before_(state_.restarts),
        corrupt_lines_before_(CorruptLines()),
        slots_(config_.workers),
        status_(work_, config_.findings),
        repros_(config_.findings, work_, config_.repro_seconds, ReproJobs()),
        triage_({work_ + "/crashes", config_.findings, config_.targets, config_.timeout,
                 config_.variants, /*outside_mps=*/AnyMps()},
                state_.handled_artifacts, state_.quarantine) {
    repros_.set_outside_mps(AnyMps());
    groups_ = GroupSlotsByGpu(config_.gpus);
    slot_group_ = GroupOfSlot(groups_, slots_.size());
    // One GPU keeps the one server for all (cmd_campaign starts one a GPU
    // only for two or more).
    per_gpu_mps_ = groups_.size() > 1 && mps_.size() == groups_.size();
    if (mps_.empty()) mps_.emplace_back();
    mps_faults_.assign(mps_.size(), false);
    mps_restarts_.assign(mps_.size(), 0);
    short_lived_mps_.assign(mps_.size(), 0);
    last_mps_restart_.assign(mps_.size(), Clock::time_point{});
    restarts_by_slot_.assign(slots_.size(), 0);
    if (config_.isolated_share > 0) {
      std::error_code ec;
      fs::create_directories(LaneDir(), ec);
      lane_ = std::make_unique<IsolatedLane>(LaneContext{
          LaneDir(), config_.findings, config_.targets, config_.isolated_timeout,
          work_ + "/logs", config_.gpus, WorkerEnvironment(config_)});
    }
  }

  bool AnyMps() const {
    for (const MpsServer& m : mps_) {
      if (m.running()) return true;
    }
    return false;
  }

  // The server slot i's worker joins: its GPU's (one MPS server a GPU), or
  // the one for all.
  size_t MpsIndexOf(size_t slot) const {
    return per_gpu_mps_ && slot < slot_group_.size() && slot_group_[slot] >= 0
               ? static_cast<size_t>(slot_group_[slot])
               : 0;
  }

  // Checked by the command before the campaign starts.
  static store::Baseline LoadBaselineOrEmpty(const std::string& path) {
    absl::StatusOr<store::Baseline> b = store::LoadBaseline(path);
    if (!b.ok()) std::cerr << "divfuzz campaign: " << b.status().message() << "\n";
    return b.ok() ? *std::move(b) : store::Baseline{};
  }

  // --baseline: the index says new or known, and the known bugs' programs
  // are replayed (which are gone?). Returns the summary's lines about them.
  std::string CheckBaseline() {
    if (baseline_.empty()) return "";
    std::vector<nlohmann::json> index;
    if (auto store = store::FindingsStore::Open(config_.findings); store.ok()) {
      if (auto loaded = (*store)->Load(); loaded.ok()) index = *std::move(loaded);
      std::map<std::string, std::string> marks;
      for (const nlohmann::json& e : index) marks[e.value("id", "")] = baseline_.StatusOf(e);
      if (absl::Status s = (*store)->Annotate("baseline", marks); !s.ok()) {
        std::cerr << "divfuzz campaign: marking buckets new or known failed: " << s.message()
                  << "\n";
      }
    }
    const std::vector<KnownBugCheck> checks =
        ReplayKnownBugs(baseline_, index, config_.targets, config_.timeout, work_ + "/logs",
                        std::cout);
    if (absl::Status s = WriteKnownBugChecks(work_ + "/baseline_check.json", baseline_.path, checks);
        !s.ok()) {
      std::cerr << "divfuzz campaign: " << s.message() << "\n";
    }
    return KnownBugChecksText(checks);
  }

  std::string LaneDir() const { return work_ + "/lane"; }

  // Reducers share the cores with the workers: one per 8 cores by default.
  static int ReproJobs() {
    const int jobs = absl::GetFlag(FLAGS_repro_jobs);
    if (jobs > 0) return jobs;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 8));
  }

  int Run() {
    // Sampled corpora a killed run left behind: their inputs join the corpus.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(work_ + "/restart-corpus", ec)) {
      MergeInto(e.path().string(), work_ + "/corpus");
      RemoveCorpusFolder(e.path().string());
    }
    ::rmdir((work_ + "/restart-corpus").c_str());
    // Inputs an earlier run's end left unreplayed.
    triage_.Request();
    // Workers, reducers and replays inherit it; OMP_NUM_THREADS set by the
    // user wins.
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      const int flag = absl::GetFlag(FLAGS_threads);
      const unsigned threads =
          flag > 0 ? static_cast<unsigned>(flag) : std::max<unsigned>(1, cores / slots_.size());
      setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
    }
    signal(SIGINT, RequestStop);
    signal(SIGTERM, RequestStop);
    const auto start = Clock::now();
    const double base = state_.elapsed_seconds;
    auto elapsed = [&] {
      return base + std::chrono::duration<double>(Clock::now() - start).count();
    };
    auto last_report = Clock::now() - std::chrono::seconds(4);
    auto last_html = Clock::now();
    while (true) {
      const int remaining = config_.budget_seconds - static_cast<int>(elapsed());
      if (!stop_requested && remaining >= 1) {
        for (size_t i = 0; i < slots_.size(); ++i) {
          if (slots_[i].pid <= 0 && !slots_[i].finished) Spawn(i, remaining);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      Reap();
      for (size_t g = 0; g < mps_faults_.size(); ++g) {
        if (mps_faults_[g]) RestartMpsClients(g);
      }
      Watch();
      TakeTriage();
      if (config_.repro_seconds > 0 && !stop_requested) repros_.Poll();
      state_.elapsed_seconds = elapsed();
      if (Clock::now() - last_report >= std::chrono::seconds(5)) {
        last_report = Clock::now();
        Checkpoint();
      }
      // An overnight campaign's report is readable while it runs.
      if (Clock::now() - last_html >= std::chrono::minutes(5)) {
        last_html = Clock::now();
        WriteHtmlReport();
      }
      if (!store_failure_.empty()) {
        std::cout << "divfuzz campaign: stopping: " << store_failure_ << "\n";
        StopAll();
        break;
      }
      if (stop_requested) {
        std::cout << "divfuzz campaign: stopping (resume with --resume=" << work_ << ")\n";
        StopAll();
        break;
      }
      if (Alive() == 0 && (remaining < 1 || AllFinished())) break;
      // libFuzzer missed its own deadline (a hung input past -timeout's reach).
      if (elapsed() > config_.budget_seconds + 30) StopAll(/*overdue=*/true);
    }
    const bool cut_short = stop_requested || !store_failure_.empty();
    // Reducers still running kClosingSeconds past the budget are stopped:
    // their buckets stay in unminimized.txt for `divfuzz repro`.
    const auto budget_end = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(config_.budget_seconds - base));
    const auto reducers_end =
        cut_short ? Clock::now() : std::max(Clock::now(), budget_end) + kClosingSeconds;
    repros_.Finish(static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::seconds>(reducers_end - Clock::now()).count())));
    // The lane runs what is queued until the reducers' end; the rest stays
    // queued for a resumed campaign.
    if (lane_) {
      lane_->Finish(reducers_end);
      const LaneCounts n = lane_->counts();
      std::cout << "divfuzz campaign: isolated lane: " << n.run << " declined program(s) run ("
                << n.clean << " to their end, " << n.hangs << " hang(s), " << n.crashes
                << " crash(es), " << n.unconfirmed << " of them not recurring), " << n.dropped
                << " dropped, " << n.failed << " could not run; " << lane_->Queued()
                << " left queued in " << LaneDir() << "\n";
    }
    // Programs the reducers hung in (repro --hang_artifacts) become hang
    // findings. The inputs that killed workers are replayed to the end: a
    // hang's evidence is its replays, and an unresumed campaign would lose
    // them. Ctrl-C leaves them for a resume.
    if (cut_short) triage_.SetDeadline(Clock::now());
    if (!cut_short) triage_.Request();
    if (!triage_.Drain(std::chrono::milliseconds(200))) {
      std::cout << "divfuzz campaign: replaying the inputs that killed workers (a hang's "
                   "confirmation takes up to six --timeout's; Ctrl-C leaves them for --resume)\n"
                << std::flush;
      while (!triage_.Drain(std::chrono::milliseconds(200))) {
        if (stop_requested) triage_.SetDeadline(Clock::now());
      }
    }
    TakeTriage();
    if (const int left = UnhandledArtifacts(work_ + "/crashes", state_.handled_artifacts); left > 0) {
      std::cout << "divfuzz campaign: " << left
                << " worker-killing input(s) not replayed before the end; --resume=" << work_
                << " replays them first\n";
    }
    for (MpsServer& m : mps_) m.Stop();  // every client is gone
    state_.elapsed_seconds = elapsed();
    Checkpoint();  // also merges the last sampled corpora
    ::rmdir((work_ + "/restart-corpus").c_str());  // empty by now
    if (config_.repro_seconds > 0) {
      std::cout << "divfuzz campaign: buckets minimized with repros in this run: " << repros_.done()
                << "\n";
    }
    WriteHtmlReport();
    const nlohmann::json totals = SumWorkerStats(work_);
    if (config_.workers > 1 && state_.elapsed_seconds > 0) {
      std::cout << "divfuzz campaign: exec/s per worker:";
      const std::vector<int64_t> per = ExecutionsPerWorker(work_, config_.workers);
      for (size_t i = 0; i < per.size(); ++i) {
        std::cout << absl::StrFormat(" %d%s=%.1f", i,
                                     i < config_.gpus.size() ? "@gpu" + config_.gpus[i] : "",
                                     per[i] / state_.elapsed_seconds);
      }
      std::cout << "\n";
      PrintPerGpu(per);
    }
    const std::string known_bugs = cut_short ? "" : CheckBaseline();
    PrintSummary(config_.findings, work_, totals.value("executions", int64_t{0}),
                 state_.elapsed_seconds, state_.restarts, totals, std::cout,
                 baseline_.empty() ? nullptr : &baseline_, known_bugs);
    if (const int64_t moved = CorruptLines() - corrupt_lines_before_; moved > 0) {
      std::cerr << "divfuzz campaign: " << moved << " corrupt line(s) of " << config_.findings
                << "/index.jsonl were set aside into " << config_.findings
                << "/index.jsonl.corrupt during the run\n";
    }
    return ExitCode();
  }

 private:
  struct Slot {
    pid_t pid = -1;
    bool finished = false;  // ran to the end of its time
    std::string log;
    // The watchdog's view of the worker's in-flight record (fuzz/harness/inflight.h).
    uint64_t sequence = 0;
    Clock::time_point since;  // when `sequence` began, or was last seen idle
    bool wedged = false;      // killed by the watchdog
    bool spawned = false;     // a worker ran in this slot in this run
    std::string own_corpus;   // a replacement's sampled corpus (fuzz/campaign/restart_corpus.h)
  };

  void Spawn(size_t i, int remaining) {
    const int gen = state_.generations++;
    Slot& s = slots_[i];
    s.log = absl::StrCat(work_, "/logs/worker-", i, "-", gen, ".log");
    std::vector<std::string> argv = {
        "divfuzz", "fuzz", absl::StrCat("-max_total_time=", remaining), "-max_len=65536",
        absl::StrCat("-timeout=", config_.timeout),
        absl::StrCat("-rss_limit_mb=", config_.rss_limit_mb),
        absl::StrCat("-artifact_prefix=", work_, "/crashes/"), "-print_final_stats=1",
        // Corpus files are only ever added, so a resumed campaign finds every
        // one it had (libFuzzer would otherwise replace inputs by smaller ones).
        "-reduce_inputs=0"};
    if (config_.seed != 0) argv.push_back(absl::StrCat("-seed=", config_.seed + gen));
    if (!config_.feedback) argv.push_back("-keep_seed=1");
    MergeOwnCorpus(s);
    const int sample = absl::GetFlag(FLAGS_restart_sample);
    // A resumed campaign's workers are replacements too, but for worker 0,
    // which reads the whole corpus: all eight re-running a 2,400-input corpus
    // held a resumed campaign at 100 programs/s for 200 s (session 34, H200).
    const bool replaces = s.spawned || (state_.resumes > 0 && i != 0);
    if (replaces && sample > 0 && CountFiles(work_ + "/corpus") > static_cast<size_t>(sample)) {
      const std::string own = absl::StrCat(work_, "/restart-corpus/", i, "-", gen);
      if (SampleCorpus(work_ + "/corpus", own, sample, config_.seed + gen).ok()) {
        s.own_corpus = own;
      }
    }
    s.spawned = true;
    if (s.own_corpus.empty()) {
      argv.push_back(work_ + "/corpus");
      argv.insert(argv.end(), config_.seeds.begin(), config_.seeds.end());
    } else {
      argv.push_back(s.own_corpus);  // the seeds' useful inputs are in the corpus
    }
    // The campaign's settings (fuzz/settings.def), then what is this
    // worker's own or changes while the campaign runs.
    std::map<std::string, std::string> env = WorkerEnvironment(config_);
    env["DIVFUZZ_STATS"] = absl::StrCat(work_, "/logs/stats-", i, "-", gen, ".json");
    env["DIVFUZZ_QUARANTINE"] = absl::StrJoin(state_.quarantine, ",");
    env["DIVFUZZ_SKIP_INPUTS"] = work_ + "/skip_inputs.txt";
    env["DIVFUZZ_INFLIGHT"] = InflightPath(i);
    // This worker's CUDA switches (--cuda_variants; checked when the campaign began).
    if (const std::string t = WorkerTargets(i); !t.empty()) env["DIVFUZZ_TARGETS"] = t;
    if (i < config_.gpus.size()) env["CUDA_VISIBLE_DEVICES"] = config_.gpus[i];
    std::vector<std::string> unset;
    const MpsServer& mps = mps_[MpsIndexOf(i)];
    if (mps.running()) {
      env["DIVFUZZ_ON_MPS"] = "1";
      env["CUDA_MPS_PIPE_DIRECTORY"] = mps.pipe_dir();
      // A GPU's own server sees that GPU alone; its clients name none
      // (NVIDIA's MPS guide).
      if (MpsClientsNameNoGpu(groups_.size(), per_gpu_mps_)) {
        env.erase("CUDA_VISIBLE_DEVICES");
        unset.push_back("CUDA_VISIBLE_DEVICES");
      }
    }
    if (lane_) env[kLaneDirVariable] = LaneDir();
    s.pid = SpawnSelf(argv, {env, s.log, /*append_log=*/true, unset});
    s.sequence = 0;
    s.since = Clock::now();
    s.wedged = false;
  }

  // libFuzzer's -timeout alarm ends an input that runs too long. A worker
  // still on one input long after that has a wedged alarm handler (a heap
  // the kernel under test corrupted deadlocks it, as it does the crash
  // handler): kill it, and Reap keeps its input as a timeout artifact.
  void Watch() {
    const auto limit = std::chrono::seconds(2 * config_.timeout + 10);
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.pid <= 0 || s.wedged) continue;
      const std::optional<InflightState> now = PeekInflight(InflightPath(i));
      if (!now || now->size == 0 || now->sequence != s.sequence) {
        s.sequence = now ? now->sequence : 0;
        s.since = Clock::now();
        continue;
      }
      if (Clock::now() - s.since < limit) continue;
      s.wedged = true;
      std::cout << "divfuzz campaign: worker " << i << " has run one input for "
                << std::chrono::duration_cast<std::chrono::seconds>(limit).count()
                << " s, past libFuzzer's -timeout=" << config_.timeout
                << " (its handlers are wedged); killing it\n";
      kill(s.pid, SIGKILL);
    }
  }

  void Reap() {
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      int status = 0;
      if (s.pid <= 0 || waitpid(s.pid, &status, WNOHANG) != s.pid) continue;
      s.pid = -1;
      if (stop_requested) continue;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        s.finished = true;
        continue;
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == kExitWorkerStoreFailed) {
        store_failure_ =
            absl::StrCat("worker ", i, " ", StoreFailureLine(s.log), " (log: ", s.log, ")");
        continue;
      }
      ++state_.restarts;
      ++restarts_by_slot_[i];
      const size_t m = MpsIndexOf(i);
      if (mps_[m].running() && WIFEXITED(status) && WEXITSTATUS(status) == kExitMpsFault) {
        std::cout << "divfuzz campaign: worker " << i
                  << " met a CUDA fault on the MPS server"
                  << (per_gpu_mps_ ? " of GPU " + groups_[m].gpu : "") << " (log: " << s.log
                  << ")\n";
        SaveInflight(i, kMpsFaultPrefix);
        mps_faults_[m] = true;
        WriteSkipList(work_ + "/crashes", state_.quarantine, work_ + "/skip_inputs.txt");
        triage_.Request();
        continue;
      }
      // After a fault the server takes no new client until all have gone.
      if (mps_[m].running() && WIFEXITED(status) && WEXITSTATUS(status) == kExitCannotRun) {
        mps_faults_[m] = true;
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == kExitCannotRun) ++startup_failures_;
      std::cout << "divfuzz campaign: worker " << i << " died: " << DeathReason(status)
                << " (log: " << s.log << "); starting a new one\n";
      SaveInflight(i, s.wedged ? "timeout-" : "crash-");
      // The replacement starts at once, skipping every input that killed a
      // worker; the input is replayed in the background (TakeTriage picks up
      // the ops it quarantines).
      WriteSkipList(work_ + "/crashes", state_.quarantine, work_ + "/skip_inputs.txt");
      triage_.Request();
    }
  }

  // A CUDA fault reaches every client of the MPS server, and the server
  // takes no new client until all have gone (NVIDIA's MPS guide, "Error
  // containment"): the workers go, the server restarts, and the workers
  // start again. Replays and reducers run away from it.
  // Three restarts in a row that did not last 15 s: the campaign goes on
  // without MPS.
  void RestartMpsClients(size_t m) {
    mps_faults_[m] = false;
    // Only this server's clients: with one server a GPU, the other GPUs'
    // workers go on (fuzz/campaign/gpu_groups.h).
    std::vector<bool> alive(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i) alive[i] = slots_[i].pid > 0;
    std::vector<size_t> victims;
    if (per_gpu_mps_) {
      victims = SlotsToRestart(groups_, m, alive);
    } else {
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (alive[i]) victims.push_back(i);
      }
    }
    for (size_t i : victims) {
      Slot& s = slots_[i];
      kill(s.pid, SIGKILL);
      waitpid(s.pid, nullptr, 0);
      s.pid = -1;
      // The fault may have been this worker's, surfacing in another one (the
      // corpus kept the input, and every restart of the workers would run
      // it again): its input too is replayed alone and skipped from now on.
      const std::string saved =
          SaveInflightArtifact(InflightPath(i), work_ + "/crashes", kMpsFaultPrefix, OwnTargets(i));
      if (!saved.empty()) std::cout << "divfuzz campaign: worker " << i << " was running " << saved << "\n";
    }
    WriteSkipList(work_ + "/crashes", state_.quarantine, work_ + "/skip_inputs.txt");
    triage_.Request();
    mps_[m].Stop();
    const auto now = Clock::now();
    short_lived_mps_[m] =
        now - last_mps_restart_[m] < std::chrono::seconds(15) ? short_lived_mps_[m] + 1 : 0;
    last_mps_restart_[m] = now;
    ++mps_restarts_[m];
    const std::string gpu = per_gpu_mps_ ? groups_[m].gpu : "";
    if (!per_gpu_mps_) unsetenv("CUDA_MPS_PIPE_DIRECTORY");  // else Start sees it as the user's
    absl::StatusOr<MpsServer> again =
        short_lived_mps_[m] >= 3 ? absl::UnavailableError("it failed again within 15 s three times")
                                 : MpsServer::Start("on", work_, /*uses_cuda=*/true, gpu);
    const std::string which = gpu.empty() ? "the MPS server" : "GPU " + gpu + "'s MPS server";
    if (again.ok()) {
      mps_[m] = *std::move(again);
      if (!per_gpu_mps_) setenv("CUDA_MPS_PIPE_DIRECTORY", mps_[m].pipe_dir().c_str(), 1);
      std::cout << "divfuzz campaign: a CUDA fault reached the clients of " << which
                << ": restarted it and its " << victims.size() << " worker(s) ("
                << mps_restarts_[m] << " so far)\n";
    } else {
      std::cout << "divfuzz campaign: " << which << " cannot be restarted ("
                << again.status().message()
                << "); going on without it, its workers time-sliced on the GPU\n";
    }
  }

  // One line a GPU: its workers' exec/s, restarts and MPS restarts (what
  // scripts/gpu/multi_gpu.sh reads).
  void PrintPerGpu(const std::vector<int64_t>& per_worker) const {
    if (groups_.size() < 2 || state_.elapsed_seconds <= 0) return;
    std::cout << "divfuzz campaign: per GPU:";
    for (size_t g = 0; g < groups_.size(); ++g) {
      int64_t executions = 0;
      int restarts = 0;
      for (size_t i : groups_[g].slots) {
        if (i < per_worker.size()) executions += per_worker[i];
        restarts += restarts_by_slot_[i];
      }
      std::cout << absl::StrFormat(" gpu%s=%.1f/s,%d restarts,%d mps restarts;", groups_[g].gpu,
                                   executions / state_.elapsed_seconds, restarts,
                                   per_gpu_mps_ ? mps_restarts_[g] : mps_restarts_[0]);
    }
    std::cout << "\n";
  }

  // What the background triage learned since last time: the ops to
  // quarantine (workers read them from the skip list) and the inputs handled.
  void TakeTriage() {
    const uint64_t passes = triage_.passes();
    if (passes == triage_passes_) return;
    triage_passes_ = passes;
    state_.handled_artifacts = triage_.Seen();
    state_.quarantine = triage_.Quarantine();
    // Before the state: a resumed campaign's workers read the list as saved.
    WriteSkipList(work_ + "/crashes", state_.quarantine, work_ + "/skip_inputs.txt");
    (void)SaveState(work_, state_);
  }

  // Kills the workers; `overdue`: they ran past the budget, so the input
  // one was running hung past libFuzzer's -timeout and is kept as a hang.
  void StopAll(bool overdue = false) {
    for (Slot& s : slots_) {
      if (s.pid > 0) kill(s.pid, SIGKILL);
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.pid > 0) {
        waitpid(s.pid, nullptr, 0);
        if (overdue) SaveInflight(i, "timeout-");
      }
      s.pid = -1;
    }
  }

  std::string InflightPath(size_t i) const { return absl::StrCat(work_, "/logs/inflight-", i); }

  // A worker that died before libFuzzer's handler wrote an artifact (SIGKILL,
  // a heap the kernel corrupted) still leaves the input it was running.
  // Worker i's target pair: the campaign's with its rotated CUDA switches
  // ("" where the list does not parse: checked when the campaign began).
  std::string WorkerTargets(size_t i) const {
    absl::StatusOr<std::string> t =
        exec::RotatedTargets(config_.targets, config_.cuda_variants, static_cast<int>(i));
    return t.ok() ? *t : "";
  }

  // Worker i's targets where its CUDA side carries switches, else "": its
  // artifacts are replayed with them (artifact_files.h).
  std::string OwnTargets(size_t i) const {
    const std::string t = WorkerTargets(i);
    return t != config_.targets ? t : "";
  }

  void SaveInflight(size_t i, const std::string& prefix) {
    const std::string saved =
        SaveInflightArtifact(InflightPath(i), work_ + "/crashes", prefix, OwnTargets(i));
    if (!saved.empty()) {
      std::cout << "divfuzz campaign: worker " << i
                << " left no artifact; kept the input it was running as " << saved << "\n";
    }
  }

  void WriteHtmlReport() {
    absl::StatusOr<std::string> page = report::WriteReport({work_, config_.findings, ""});
    if (page.ok()) {
      std::cout << "divfuzz campaign: report " << *page << "\n";
    } else {
      std::cerr << "divfuzz campaign: writing the HTML report failed: " << page.status().message()
                << "\n";
    }
  }

  int Alive() const {
    int n = 0;
    for (const Slot& s : slots_) n += s.pid > 0;
    return n;
  }

  bool AllFinished() const {
    for (const Slot& s : slots_) {
      if (!s.finished) return false;
    }
    return true;
  }

  // A replacement's new inputs join the shared corpus (the other workers
  // reload it); once the worker is gone, its folder goes too.
  void MergeOwnCorpus(Slot& s) {
    if (s.own_corpus.empty()) return;
    MergeInto(s.own_corpus, work_ + "/corpus");
    if (s.pid <= 0) {
      RemoveCorpusFolder(s.own_corpus);
      s.own_corpus.clear();
    }
  }

  void Checkpoint() {
    for (Slot& s : slots_) MergeOwnCorpus(s);
    if (absl::Status st = SaveState(work_, state_); !st.ok()) {
      std::cerr << "divfuzz campaign: saving state failed: " << st.message() << "\n";
    }
    const nlohmann::json totals = SumWorkerStats(work_);
    const int64_t executions = totals.value("executions", int64_t{0});
    status_.Report(state_.elapsed_seconds, executions,
                   executions + totals.value("variant_cases", int64_t{0}), Alive(),
                   state_.restarts);
  }

  // 2 when the run could not do its job (the store failed, no worker could
  // start), else 1 when a bucket at or above --fail_on
  // was hit in this run, else 0; the summary says which.
  int ExitCode() {
    if (!store_failure_.empty()) {
      std::cerr << "divfuzz campaign: " << store_failure_
                << "; findings after that were not recorded (exit 2)\n";
      return kExitCannotRun;
    }
    const bool any_finished =
        std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.finished; });
    // Workers that die on an input ran it (a crash finding); ones that exit
    // 2 could not start at all (a plugin, a policy, the store).
    if (!stop_requested && !any_finished && startup_failures_ > 0 &&
        startup_failures_ == state_.restarts - restarts_before_) {
      std::cerr << "divfuzz campaign: no worker could start (every one exited 2; see " << work_
                << "/logs/) (exit 2)\n";
      return kExitCannotRun;
    }
    if (fail_on_.max_order < 0) return kExitClean;
    std::vector<nlohmann::json> known;
    const std::vector<nlohmann::json> hit =
        BucketsHitAtOrAbove(fail_on_, buckets_before_, config_.findings, &baseline_, &known);
    // Known ones are named, but do not fail the run.
    const std::string known_text =
        known.empty() ? ""
                      : absl::StrCat(" (", known.size(), " known bucket(s) of --baseline hit too, "
                                     "not counted)");
    const std::string what = baseline_.empty() ? "" : "new ";
    if (hit.empty()) {
      std::cout << "fail_on=" << fail_on_.name << ": no " << what << "bucket at or above "
                << fail_on_.name << " was hit in this run" << known_text << " (exit 0)\n";
      return kExitClean;
    }
    std::cout << "fail_on=" << fail_on_.name << ": " << hit.size() << " " << what
              << "bucket(s) at or above " << fail_on_.name << " hit in this run" << known_text
              << " (exit 1):";
    for (const nlohmann::json& e : hit) {
      std::cout << " " << e.value("id", "") << " [" << e.value("severity", "") << "]";
    }
    std::cout << "\n";
    return kExitFindings;
  }

  // Lines in the store's index.jsonl.corrupt (what was set aside so far).
  int64_t CorruptLines() const {
    std::ifstream in(config_.findings + "/index.jsonl.corrupt");
    return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  }

  // The worker's own line saying why it could not record a finding.
  static std::string StoreFailureLine(const std::string& log) {
    std::ifstream in(log);
    std::string line, found;
    while (std::getline(in, line)) {
      if (absl::StartsWith(line, "divfuzz: cannot record a finding")) found = line.substr(9);
    }
    return found.empty() ? "it could not record a finding in the findings store" : found;
  }

  // First: they outlive every process that uses them. One a GPU group, or
  // one (perhaps not running) for all.
  std::vector<MpsServer> mps_;
  std::string work_;
  CampaignConfig config_;
  CampaignState state_;
  FailOn fail_on_;
  std::map<std::string, int64_t> buckets_before_;
  store::Baseline baseline_;  // --baseline; empty without
  int restarts_before_ = 0;
  int64_t corrupt_lines_before_ = 0;
  std::string store_failure_;  // set when a worker could not record a finding
  int startup_failures_ = 0;   // workers of this run that exited 2 (could not start)
  // Per server (mps_): a worker met a CUDA fault on it; its restarts.
  std::vector<bool> mps_faults_;
  std::vector<int> mps_restarts_, short_lived_mps_;
  std::vector<Clock::time_point> last_mps_restart_;
  std::vector<GpuGroup> groups_;  // the slots of each GPU
  std::vector<int> slot_group_;   // slot -> group
  bool per_gpu_mps_ = false;      // mps_[g] serves groups_[g]
  std::vector<int> restarts_by_slot_;
  std::vector<Slot> slots_;
  StatusReporter status_;
  ReproQueue repros_;
  ArtifactTriage triage_;
  // The isolated lane (--isolated_share > 0): declined programs run alone.
  std::unique_ptr<IsolatedLane> lane_;
  uint64_t triage_passes_ = 0;  // triage_.passes() when TakeTriage last looked
};

}  // namespace

int SuperviseCampaign(std::string work, CampaignConfig config, CampaignState state,
                      FailOn fail_on, std::vector<MpsServer> mps) {
  return Supervisor(std::move(work), std::move(config), std::move(state), std::move(fail_on),
                    std::move(mps))
      .Run();
}

}  // namespace divfuzz::fuzz
