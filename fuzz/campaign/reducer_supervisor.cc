#include "fuzz/campaign/reducer_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fuzz/campaign/spawn.h"
#include "fuzz/exit_codes.h"
#include "graph/stable_hash.h"
#include "nlohmann/json.hpp"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

constexpr char kChannelVar[] = "DIVFUZZ_REPRO_CHANNEL";
constexpr char kStateVar[] = "DIVFUZZ_REPRO_STATE";

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// What the supervisor knows of the finding its child is on.
struct Progress {
  long arg = -1;
  Clock::time_point began;
  bool in_run = false;
  Clock::time_point run_since;
  std::string running;    // the program of the run in flight
  std::string first_run;  // the first program this child ran for it: its start
  // A hang or crash finding: its kind and signature, the node announced
  // last (and its "op|dtype"), and whether the run hit a CUDA fault.
  std::string failing;
  std::string signature;
  int last_node = -1;
  std::string last_at;
  bool fault = false;
  int runs = 0;
};

// How a child ended before finishing every finding.
struct Failure {
  bool hung = false;  // killed by the supervisor (else it died by itself)
  std::string why;
  bool run_timeout = false;  // one run went over --timeout
};

// "op|dtype|class|side" -> "op|dtype".
std::string OpAndDType(const std::string& signature) {
  const size_t op_end = signature.find('|');
  const size_t end = op_end == std::string::npos ? op_end : signature.find('|', op_end + 1);
  return signature.substr(0, end);
}

// A failure finding's reduction budget: a candidate that still fails costs
// a whole --timeout (a hang) and a new process, so more than a divergence's.
int FailureBudget(const SupervisorSettings& s) {
  return std::max(s.max_seconds, kFailureTimeouts * s.run_timeout);
}

// What a child starts from: the findings done, and where to resume one.
nlohmann::json ChildState(const std::vector<int>& rc, const std::map<size_t, ReproResume>& resume) {
  nlohmann::json state = {{"done", nlohmann::json::array()}};
  for (size_t i = 0; i < rc.size(); ++i) {
    if (rc[i] >= 0) state["done"].push_back(i);
  }
  if (!resume.empty()) {
    const auto& [arg, r] = *resume.begin();
    state["resume"] = {{"arg", arg},
                       {"best", r.best},
                       {"signature", r.signature},
                       {"tier", r.tier},
                       {"reduce", r.reduce},
                       {"skip", r.skip},
                       {"node", r.node},
                       {"confirmed", r.confirmed},
                       {"seconds_left", r.seconds_left},
                       {"returned", r.returned},
                       {"runs", r.runs}};
  }
  return state;
}

// One report of the child (ReproChild's Begin, Run, Keep, End).
void Apply(const nlohmann::json& ev, Progress* p, std::vector<int>* rc,
           std::map<size_t, ReproResume>* resume) {
  const std::string kind = ev.value("ev", "");
  if (kind == "begin") {
    *p = Progress{};
    p->arg = ev.value("arg", -1L);
    p->began = Clock::now();
  } else if (kind == "failing") {
    p->failing = ev.value("kind", "");
    p->signature = ev.value("signature", "");
  } else if (kind == "node") {
    p->last_node = ev.value("i", -1);
    p->last_at = ev.value("at", "");
  } else if (kind == "fault") {
    p->fault = true;
  } else if (kind == "run") {
    std::string program = ev.value("program", "");
    // A failure finding's candidate that returned after a second or more:
    // a restarted child need not run it again.
    if (program.empty() && p->in_run && !p->failing.empty() && p->arg >= 0 &&
        Clock::now() - p->run_since >= std::chrono::seconds(1)) {
      (*resume)[static_cast<size_t>(p->arg)].returned.insert(p->running);
    }
    p->in_run = !program.empty();
    if (p->in_run) {
      ++p->runs;
      if (p->first_run.empty()) p->first_run = program;
      p->running = std::move(program);
      p->run_since = Clock::now();
    }
  } else if (kind == "keep" && p->arg >= 0) {
    ReproResume& r = (*resume)[static_cast<size_t>(p->arg)];
    r.best = ev.value("program", "");
    r.signature = ev.value("signature", "");
    r.tier = ev.value("tier", "");
  } else if (kind == "end") {
    const size_t arg = ev.value("arg", static_cast<size_t>(0));
    if (arg < rc->size()) (*rc)[arg] = ev.value("rc", 2);
    resume->erase(arg);
    *p = Progress{};
  }
}

std::string Saved(const std::string& dir, const std::string& prefix, const std::string& program) {
  const std::string path =
      absl::StrCat(dir, "/", prefix, "-reduce-",
                   absl::Hex(graph::Fnv1a64(program.data(), program.size()), absl::kZeroPad16));
  const absl::Status s = store::WriteFileAtomically(path, program);
  return s.ok() ? path : std::string(s.message());
}

}  // namespace

std::optional<ReproChild> ReproChild::FromEnvironment() {
  const char* channel = std::getenv(kChannelVar);
  const char* state_path = std::getenv(kStateVar);
  int fd = -1;
  if (channel == nullptr || state_path == nullptr || !absl::SimpleAtoi(channel, &fd)) {
    return std::nullopt;
  }
  ReproChild child;
  child.fd_ = fd;
  const nlohmann::json state = nlohmann::json::parse(ReadFile(state_path), nullptr, false);
  if (!state.is_object()) return child;
  for (const nlohmann::json& a : state.value("done", nlohmann::json::array())) {
    child.done_.insert(a.get<size_t>());
  }
  const nlohmann::json resume = state.value("resume", nlohmann::json());
  if (resume.is_object()) {
    child.resume_arg_ = resume.value("arg", static_cast<size_t>(-1));
    child.resume_.best = resume.value("best", "");
    child.resume_.signature = resume.value("signature", "");
    child.resume_.tier = resume.value("tier", "");
    child.resume_.reduce = resume.value("reduce", true);
    for (const nlohmann::json& s : resume.value("skip", nlohmann::json::array())) {
      child.resume_.skip.insert(s.get<std::string>());
    }
    child.resume_.node = resume.value("node", -1);
    child.resume_.confirmed = resume.value("confirmed", false);
    child.resume_.seconds_left = resume.value("seconds_left", -1.0);
    child.resume_.runs = resume.value("runs", 0);
    for (const nlohmann::json& s : resume.value("returned", nlohmann::json::array())) {
      child.resume_.returned.insert(s.get<std::string>());
    }
  }
  return child;
}

void ReproChild::Send(const std::string& line) const {
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the supervisor is gone: PDEATHSIG ends this process
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void ReproChild::Begin(size_t arg) const {
  Send(nlohmann::json{{"ev", "begin"}, {"arg", arg}}.dump());
}

void ReproChild::Run(const std::string& program) const {
  Send(nlohmann::json{{"ev", "run"}, {"program", program}}.dump());
}

void ReproChild::Keep(const std::string& program, const std::string& signature,
                      const std::string& tier) const {
  Send(
      nlohmann::json{{"ev", "keep"}, {"program", program}, {"signature", signature}, {"tier", tier}}
          .dump());
}

void ReproChild::End(size_t arg, int rc) const {
  Send(nlohmann::json{{"ev", "end"}, {"arg", arg}, {"rc", rc}}.dump());
}

void ReproChild::Failing(const std::string& kind, const std::string& signature) const {
  Send(nlohmann::json{{"ev", "failing"}, {"kind", kind}, {"signature", signature}}.dump());
}

void ReproChild::Node(int index, const std::string& at) const {
  Send(nlohmann::json{{"ev", "node"}, {"i", index}, {"at", at}}.dump());
}

void ReproChild::Fault() const { Send(nlohmann::json{{"ev", "fault"}}.dump()); }

int SuperviseRepro(const std::vector<std::string>& args, const SupervisorSettings& settings) {
  const std::string me = absl::StrCat("divfuzz ", settings.command, ": ");
  const std::vector<std::string> cmdline = OwnCommandLine();
  const char* tmp = std::getenv("TMPDIR");
  std::string state_path =
      absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/divfuzz-repro-", getpid(), ".json");
  // A kernel that hangs never returns to the reducer's budget check: a
  // finding gets its budget and twice that again (at least 10 s) in all.
  const int budget = settings.max_seconds;
  const auto grace = std::chrono::seconds(budget + std::max(10, 2 * budget));
  const auto run_limit = std::chrono::seconds(std::max(1, settings.run_timeout));
  const auto failure_grace = std::chrono::seconds(FailureBudget(settings)) + 2 * run_limit;

  std::vector<int> rc(args.size(), -1);
  std::map<size_t, ReproResume> resume;
  std::map<size_t, int> failed_candidates;
  std::map<size_t, Clock::time_point> started;  // a failure finding's first child
  for (;;) {
    const auto first_open = std::find(rc.begin(), rc.end(), -1);
    if (first_open == rc.end()) break;
    for (auto& [arg, r] : resume) {
      if (r.node < 0 || !started.count(arg)) continue;
      r.seconds_left = FailureBudget(settings) -
                       std::chrono::duration<double>(Clock::now() - started[arg]).count();
      if (r.seconds_left <= 0) r.reduce = false;
    }
    if (absl::Status s = store::WriteFileAtomically(state_path, ChildState(rc, resume).dump());
        !s.ok()) {
      std::cerr << me << s.message() << "\n";
      return 2;
    }
    int fds[2];
    if (pipe(fds) != 0) {
      std::cerr << me << "cannot make a pipe to the reducer process\n";
      return 2;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    const pid_t pid =
        SpawnSelf(cmdline, {{{kChannelVar, std::to_string(fds[1])}, {kStateVar, state_path}}});
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      std::cerr << me << "cannot start the reducer process\n";
      return 2;
    }

    Progress p;
    std::optional<Failure> failure;
    std::string buffer;
    bool open = true;
    while (open) {
      pollfd pfd{fds[0], POLLIN, 0};
      const int ready = poll(&pfd, 1, 100);
      if (ready > 0) {
        char chunk[65536];
        const ssize_t n = read(fds[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          open = false;
        } else {
          buffer.append(chunk, static_cast<size_t>(n));
        }
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          const nlohmann::json ev =
              nlohmann::json::parse(buffer.begin() + start, buffer.begin() + nl, nullptr, false);
          if (ev.is_object()) Apply(ev, &p, &rc, &resume);
          if (p.arg >= 0 && !p.failing.empty()) started.emplace(p.arg, Clock::now());
        }
        buffer.erase(0, start);
      }
      if (!open || failure || p.arg < 0) continue;
      const auto now = Clock::now();
      if (p.in_run && now - p.run_since > run_limit) {
        failure = Failure{true,
                          absl::StrCat("a program has run ", run_limit.count(),
                                       " s (--timeout=", settings.run_timeout, "): a kernel hangs"),
                          /*run_timeout=*/true};
      } else if (budget > 0 && now - p.began > (p.failing.empty() ? grace : failure_grace)) {
        failure = Failure{
            true, absl::StrCat("still running ", grace.count(),
                               " s after it started (--max_seconds=", budget, "): a kernel hangs")};
      }
      if (failure) kill(pid, SIGKILL);
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (p.arg < 0) {
      if (std::find(rc.begin(), rc.end(), -1) == rc.end()) break;
      // Died between findings (or before the first): nothing to resume, and
      // starting it again would only die again.
      std::cerr << me << "the reducer process ended (status " << status
                << ") outside any finding\n";
      for (int& r : rc) r = r < 0 ? 2 : r;
      break;
    }
    const size_t arg = static_cast<size_t>(p.arg);
    if (!failure) {
      failure =
          Failure{false, WIFSIGNALED(status)
                             ? absl::StrCat("the reducer process died by signal ", WTERMSIG(status))
                             : absl::StrCat("the reducer process exited (status ",
                                            WEXITSTATUS(status), ") mid-finding")};
    }
    const std::string culprit = p.in_run ? p.running : "";
    if (!p.failing.empty() && !culprit.empty()) {
      // A failure finding: a run that fails as the finding does, in its op
      // and dtype, is the smallest program so far (the first such run is
      // the finding's own program: confirmed).
      const bool crashed = !failure->hung && (WIFSIGNALED(status) || p.fault);
      const bool same = (p.failing == "hang" ? failure->run_timeout : crashed) &&
                        p.last_at == OpAndDType(p.signature);
      ReproResume& r = resume[arg];
      if (same) {
        std::cerr << me << args[arg] << ": "
                  << (r.confirmed ? "a smaller candidate " : "its program ")
                  << (p.failing == "hang" ? "hangs" : "crashes") << " in node " << p.last_node
                  << " (" << p.last_at << ")" << (r.confirmed ? "" : ": the finding reproduces")
                  << "; going on from it\n"
                  << std::flush;
        r.best = culprit;
        r.node = p.last_node;
        r.runs += p.runs;
        r.confirmed = true;
        r.signature = p.signature;
        r.tier = "bug";
        continue;
      }
      if (!r.confirmed) {
        std::cerr << me << args[arg] << ": " << failure->why << ", but in node " << p.last_node
                  << " (" << p.last_at << "), not as the finding does (" << p.signature
                  << "); giving up\n"
                  << std::flush;
        rc[arg] = 2;
        resume.erase(arg);
        continue;
      }
    }
    std::string line = absl::StrCat(me, args[arg], ": ", failure->why);
    if (!culprit.empty() && !settings.hang_dir.empty()) {
      // The program it hung or crashed in is a finding of its own: a campaign
      // replays what lands in its crashes/ folder and records it.
      const char* what = failure->hung ? "hanging" : "crashing";
      std::cerr << line << "\n";
      line = absl::StrCat(me, "saved the ", what, " program as ",
                          Saved(settings.hang_dir, failure->hung ? "timeout" : "crash", culprit));
    }
    if (culprit.empty() || culprit == p.first_run) {
      // Its own program (or where an earlier child had got to) fails: there
      // is nothing smaller known to work from.
      std::cerr << line << "; giving up\n" << std::flush;
      rc[arg] = 2;
      resume.erase(arg);
      continue;
    }
    ReproResume& r = resume[arg];
    r.skip.insert(culprit);
    const int failed = ++failed_candidates[arg];
    if (failed >= kMaxFailedCandidates) {
      r.reduce = false;
      std::cerr << line << "; " << failed
                << " candidates failed: the smallest program so far is the result\n";
    } else {
      std::cerr << line << "; going on from the smallest program so far, without that one ("
                << failed << " of " << kMaxFailedCandidates << ")\n";
    }
    std::cerr << std::flush;
  }
  std::remove(state_path.c_str());
  int worst = kExitClean;
  for (int r : rc) worst = WorseExit(worst, r);
  return worst;
}

}  // namespace divfuzz::fuzz
