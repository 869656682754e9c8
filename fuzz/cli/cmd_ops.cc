// divfuzz ops: the catalogue as a table or JSON, with statistics from real
// runs. --learn=N tries every generic candidate in every (dtype, shape form)
// and writes the learned table; --probe=N generates N calls of every op on
// the available targets and reports how many the kernels accepted.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "fuzz/campaign/spawn.h"
#include "graph/absl_compat.h"
#include "graph/stable_hash.h"
#include "mutators/mutator.h"
#include "mutators/node_builder.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"
#include "ops/generic.h"
#include "fuzz/cli/ops_variants.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

using graph::DType;

std::vector<exec::Target> ProbeTargets() {
  std::vector<exec::Target> t = {exec::Target::kCpu};
  if (exec::CudaAvailable()) t.push_back(exec::Target::kCuda);
  return t;
}

std::string TargetNames(const std::vector<exec::Target>& targets) {
  std::vector<std::string> names;
  for (exec::Target t : targets) names.emplace_back(std::string(exec::TargetName(t)));
  return absl::StrJoin(names, ",");
}

// How a probe child ends when it cannot go on in this process.
constexpr int kCudaFaultExit = 3;
constexpr int kHangExit = 4;

// Whether the last node of `p` (the call under test) ran on target `t`
// without raising and with the inferred result types. Outputs PyTorch leaves
// to each device (lstsq's rank on CUDA) may differ from inference. A poisoned
// CUDA context ends the process: the next call could not be trusted.
bool AcceptedOn(const graph::Program& p, const ops::TypeEnv& types, exec::Target t,
                std::string* error) {
  exec::RunResult r = exec::Run(p, types, t);
  if (!r.setup_error.empty()) {
    *error = r.setup_error;
    return false;
  }
  if (r.cuda_fatal) {
    std::cerr << "divfuzz ops: a CUDA fault poisoned the context in " << p.nodes.back().op
              << "; stopping\n";
    std::exit(kCudaFaultExit);
  }
  if (r.nodes.empty() || r.nodes.back().error) {
    if (!r.nodes.empty()) *error = r.nodes.back().error->message;
    return false;
  }
  const graph::Node& node = p.nodes.back();
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  const uint32_t device_defined = spec != nullptr ? spec->device_defined_outputs : 0;
  const std::vector<at::Tensor>& outs = r.nodes.back().outputs;
  for (size_t i = 0; i < node.results.size() && i < outs.size(); ++i) {
    if (i < 32 && ((device_defined >> i) & 1u)) continue;
    const graph::TensorType& want = types.at(node.results[i]);
    if (!outs[i].defined() || outs[i].scalar_type() != exec::ToScalarType(want.dtype) ||
        outs[i].sizes().vec() != want.shape) {
      *error = "the result's type differs from the inferred one";
      return false;
    }
  }
  return true;
}

// True when every target accepted the call (the first error in *error).
bool AcceptedEverywhere(const graph::Program& p, const ops::TypeEnv& types,
                        const std::vector<exec::Target>& targets, std::string* error) {
  for (exec::Target t : targets) {
    if (!AcceptedOn(p, types, t, error)) return false;
  }
  return true;
}

uint64_t SeedOf(const std::string& op, uint64_t salt) {
  return graph::Fnv1a64(op.data(), op.size(), graph::kFuzzHashBasis) ^
         (salt * 0x9e3779b97f4a7c15ull);
}

// Learns one op: every (dtype, shape form), `tries` calls each, counting
// acceptance on every target at once and on each alone (a pair one device
// rejects is a dtype gap or one-sided error worth generating).
ops::GenericOp LearnOp(const ops::GenericOp& candidate, int tries,
                       const std::vector<exec::Target>& targets) {
  ops::GenericOp op = candidate;
  op.forms.clear();
  for (DType dtype : graph::kAllDTypes) {
    bool dtype_missing = false;
    for (int f = 0; f < ops::kNumShapeForms && !dtype_missing; ++f) {
      ops::GenericForm form{dtype, static_cast<ops::ShapeForm>(f)};
      std::vector<int> accepted_on(targets.size(), 0);
      for (int t = 0; t < tries && !dtype_missing; ++t) {
        // Two misses in a row in inference: the form does not fit this op.
        if (form.tried == 0 && t >= 2) break;
        graph::Program p;
        ops::TypeEnv types;
        mutators::Random random(
            SeedOf(op.Qualified(), (static_cast<uint64_t>(dtype) * 16 + f) * 1000 + t));
        mutators::NodeBuilder builder(p, types, random);
        if (!builder.AppendGeneric(op, dtype, form.shape)) continue;
        p.outputs = mutators::Leaves(p);
        ++form.tried;
        bool everywhere = true;
        int missing = 0;
        for (size_t k = 0; k < targets.size(); ++k) {
          std::string error;
          const bool ok = AcceptedOn(p, types, targets[k], &error);
          accepted_on[k] += ok;
          everywhere &= ok;
          missing += exec::SaysDtypeGap(error);
        }
        form.accepted += everywhere;
        // No device has a kernel for the dtype: no other shape will change that.
        dtype_missing = missing == static_cast<int>(targets.size());
      }
      if (form.tried == 0) continue;
      for (size_t k = 0; k < targets.size(); ++k) {
        form.per_device.emplace_back(std::string(exec::TargetName(targets[k])), accepted_on[k]);
      }
      op.forms.push_back(form);
    }
  }
  // A device that ran none of the calls, in any dtype or form, has no kernel
  // for the op (slow_conv3d has no CUDA backend): every call would be the same
  // error split, a fact about the build and no finding. The op is left out.
  for (size_t k = 0; k < targets.size() && targets.size() > 1; ++k) {
    int accepted = 0;
    for (const ops::GenericForm& f : op.forms) accepted += f.per_device[k].second;
    if (accepted == 0) {
      op.forms.clear();
      break;
    }
  }
  return op;
}

// Appends to --out op by op, so a learner that a kernel crash (or a CUDA
// fault) killed resumes where it stopped: rerun the same command. The op it
// died in is recorded with no forms (dropped).
int Learn(int tries) {
  const std::vector<exec::Target> targets = ProbeTargets();
  const std::string only = absl::GetFlag(FLAGS_only);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::cerr << "divfuzz ops: --learn needs --out=FILE (appended to, resumable)\n";
    return 2;
  }
  int shard = 0, shards = 1;
  if (const std::string s = absl::GetFlag(FLAGS_shard);
      !s.empty() && (std::sscanf(s.c_str(), "%d/%d", &shard, &shards) != 2 || shards < 1 ||
                     shard < 0 || shard >= shards)) {
    std::cerr << "divfuzz ops: expected --shard=K/N with 0 <= K < N, got '" << s << "'\n";
    return 2;
  }
  std::set<std::string> done;
  std::string trying;
  {
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# trying ", 0) == 0) {
        trying = line.substr(9);
      } else if (!line.empty() && line[0] != '#') {
        done.insert(line.substr(0, line.find(' ')));
      }
    }
  }
  std::ofstream f(out, std::ios::app);
  if (!f) {
    std::cerr << "divfuzz ops: cannot write " << out << "\n";
    return 1;
  }
  if (done.empty() && trying.empty()) {
    f << ops::FormatGenericTable({}, TargetNames(targets)) << std::flush;
  }
  if (!trying.empty() && !done.count(trying)) {
    std::cerr << "divfuzz ops: " << trying << " killed the last learner; dropped\n";
    f << trying << "\n" << std::flush;
    done.insert(trying);
  }
  int index = -1, learned = 0;
  for (const ops::GenericOp& candidate : ops::GenericCandidates()) {
    if (!only.empty() && candidate.Qualified().find(only) == std::string::npos) continue;
    if (++index % shards != shard || done.count(candidate.Qualified())) continue;
    f << "# trying " << candidate.Qualified() << "\n" << std::flush;
    const ops::GenericOp op = LearnOp(candidate, tries, targets);
    std::string line = ops::FormatGenericTable({op}, "");
    f << line.substr(line.rfind('\n', line.size() - 2) + 1) << std::flush;
    ++learned;
  }
  std::cerr << "divfuzz ops: learned " << learned << " ops into " << out << "\n";
  return 0;
}

struct Stats {
  int64_t generated = 0;                  // calls generated (types inferred)
  int64_t accepted = 0;                   // ... that every target ran without raising
  int64_t executions = 0;                 // target runs
  int64_t not_generated = 0;              // attempts where no valid call could be built
  std::map<std::string, int64_t> errors;  // first error messages, counted
  double Rate() const { return generated == 0 ? 0 : static_cast<double>(accepted) / generated; }
};

nlohmann::json StatsJson(const Stats& s) {
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [msg, n] : s.errors) errors[msg] = n;
  return {{"generated", s.generated},
          {"accepted", s.accepted},
          {"executions", s.executions},
          {"not_generated", s.not_generated},
          {"acceptance", s.generated ? nlohmann::json(s.Rate()) : nlohmann::json()},
          {"errors", errors}};
}

Stats ProbeOp(const ops::OpSpec& spec, int calls, const std::vector<exec::Target>& targets) {
  const std::string name = spec.Qualified();
  std::vector<DType> dtypes;
  for (DType d : graph::kAllDTypes) {
    if (ops::Has(spec.dtypes, d)) dtypes.push_back(d);
  }
  Stats s;
  for (int i = 0; i < calls && !dtypes.empty(); ++i) {
    mutators::Random random(SeedOf(name, static_cast<uint64_t>(i) + 7777));
    graph::Program p;
    ops::TypeEnv types;
    mutators::NodeBuilder builder(p, types, random);
    if (!builder.Append(spec, random.Pick(dtypes)) || p.nodes.back().QualifiedName() != name) {
      ++s.not_generated;
      continue;
    }
    p.outputs = mutators::Leaves(p);
    ++s.generated;
    s.executions += static_cast<int64_t>(targets.size());
    std::string error;
    if (AcceptedEverywhere(p, types, targets, &error)) {
      ++s.accepted;
    } else if (s.errors.size() < 3 || s.errors.count(error)) {
      ++s.errors[error.substr(0, 160)];
    }
  }
  return s;
}

// The probe's progress, shared by the supervisor and its child process:
// {"targets", "ops": {op: stats or {"failure"}}, "current": the op running}.
nlohmann::json ReadProbeState(const std::string& path) {
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) j = nlohmann::json::object();
  if (!j.contains("ops") || !j["ops"].is_object()) j["ops"] = nlohmann::json::object();
  return j;
}

bool WriteProbeState(const std::string& path, const nlohmann::json& state) {
  const absl::Status s = store::WriteFileAtomically(path, state.dump(1) + "\n");
  if (!s.ok()) std::cerr << "divfuzz ops: cannot write " << path << ": " << s.message() << "\n";
  return s.ok();
}

// The child: probes every op the state does not have yet, writing the state
// before each op (so the supervisor knows which one killed it) and after the
// last. A watchdog ends the process when one op runs past --probe_timeout: a
// kernel stuck on the GPU cannot be interrupted otherwise.
int ProbeChild(const std::string& state_path, int calls) {
  const std::vector<exec::Target> targets = ProbeTargets();
  nlohmann::json state = ReadProbeState(state_path);
  state["targets"] = TargetNames(targets);
  const std::string only = absl::GetFlag(FLAGS_only);
  const auto timeout = std::chrono::seconds(std::max(1, absl::GetFlag(FLAGS_probe_timeout)));
  // Static: the detached watchdog outlives this frame while the process exits.
  static std::atomic<int64_t> deadline{0};  // steady-clock ms; 0: no op running
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t d = deadline.load();
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
      if (d != 0 && now > d) _exit(kHangExit);
    }
  }).detach();
  for (const ops::OpSpec& spec : ops::Catalogue()) {
    const std::string name = spec.Qualified();
    if ((!only.empty() && name.find(only) == std::string::npos) || state["ops"].contains(name)) {
      continue;
    }
    state["current"] = name;
    if (!WriteProbeState(state_path, state)) return 1;
    deadline = std::chrono::duration_cast<std::chrono::milliseconds>(
                   (std::chrono::steady_clock::now() + timeout).time_since_epoch())
                   .count();
    state["ops"][name] = StatsJson(ProbeOp(spec, calls, targets));
    deadline = 0;
  }
  state["current"] = "";
  return WriteProbeState(state_path, state) ? 0 : 1;
}

// The supervisor: runs the probe in child processes (this one never touches
// CUDA), and when a child crashes, hangs or poisons its CUDA context, records
// that against the op it was probing and starts another for the rest.
absl::StatusOr<nlohmann::json> ProbeSupervised(const std::string& state_path) {
  std::remove(state_path.c_str());
  std::vector<std::string> args = OwnCommandLine();
  for (;;) {
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      setenv("DIVFUZZ_PROBE_STATE", state_path.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    nlohmann::json state = ReadProbeState(state_path);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      std::remove(state_path.c_str());
      return state;
    }
    const std::string current = state.value("current", "");
    if (current.empty() || state["ops"].contains(current)) {
      return absl::InternalError(
          absl::StrCat("the probe process failed (status ", status, ") outside any op"));
    }
    std::string failure;
    if (WIFSIGNALED(status)) {
      failure = absl::StrCat("crashed (signal ", WTERMSIG(status), ")");
    } else if (WEXITSTATUS(status) == kHangExit) {
      failure =
          absl::StrCat("hung (over --probe_timeout=", absl::GetFlag(FLAGS_probe_timeout), " s)");
    } else if (WEXITSTATUS(status) == kCudaFaultExit) {
      failure = "a CUDA fault";
    } else {
      failure = absl::StrCat("exited with status ", WEXITSTATUS(status));
    }
    std::cerr << "divfuzz ops: " << current << " " << failure << "; the probe goes on without it\n";
    state["ops"][current] = StatsJson(Stats{});
    state["ops"][current]["failure"] = failure;
    state["current"] = "";
    if (!WriteProbeState(state_path, state)) return absl::InternalError("cannot write the state");
  }
}

// Divergences per root op and class, from the findings store's index.
std::map<std::string, std::map<std::string, int64_t>> Divergences(const std::string& findings) {
  std::map<std::string, std::map<std::string, int64_t>> out;
  ReportCorruptIndexLines(findings, "ops");
  std::ifstream f(findings + "/index.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("root_op") || !j.contains("class")) continue;
    out[j["root_op"].get<std::string>()][j["class"].get<std::string>()] +=
        j.value("count", int64_t{1});
  }
  return out;
}

}  // namespace

int RunOps(const std::vector<std::string>&) {
  if (absl::GetFlag(FLAGS_learn) > 0) return Learn(absl::GetFlag(FLAGS_learn));
  if (const std::string v = absl::GetFlag(FLAGS_cuda_variants); !v.empty()) {
    return RunOpsVariants(v);
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const std::string stats_path = absl::GetFlag(FLAGS_op_stats);
  nlohmann::json stats = nlohmann::json::object();
  std::string stats_targets;
  if (absl::GetFlag(FLAGS_probe) > 0) {
    if (const char* state = std::getenv("DIVFUZZ_PROBE_STATE"); state != nullptr) {
      return ProbeChild(state, absl::GetFlag(FLAGS_probe));
    }
    const std::string state_path = stats_path.empty()
                                       ? absl::StrCat("/tmp/divfuzz-probe-", getpid(), ".json")
                                       : stats_path + ".partial";
    absl::StatusOr<nlohmann::json> probed = ProbeSupervised(state_path);
    if (!probed.ok()) {
      std::cerr << "divfuzz ops: --probe: " << probed.status().message() << "\n";
      return 1;
    }
    stats = (*probed)["ops"];
    stats_targets = probed->value("targets", "");
    if (!stats_path.empty()) {
      std::ofstream f(stats_path);
      f << nlohmann::json{{"targets", stats_targets}, {"ops", stats}}.dump(1) << "\n";
      if (!f) {
        std::cerr << "divfuzz ops: cannot write " << stats_path << "\n";
        return 1;
      }
    }
  } else if (!stats_path.empty()) {
    std::ifstream f(stats_path);
    nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!f.good() && !f.eof()) {
      std::cerr << "divfuzz ops: cannot read " << stats_path << "\n";
      return 2;
    }
    if (j.is_discarded() || !j.contains("ops")) {
      std::cerr << stats_path << ":1: expected a JSON object with \"ops\" (from --probe)\n";
      return 2;
    }
    stats = j["ops"];
    stats_targets = j.value("targets", "");
  }
  const auto divergences = Divergences(absl::GetFlag(FLAGS_findings));

  nlohmann::json all = nlohmann::json::array();
  struct Agg {
    int64_t generated = 0, accepted = 0, ops = 0;
  };
  std::map<std::string, Agg> by_family, by_source;
  std::vector<std::pair<double, std::string>> worst;
  std::vector<std::pair<std::string, std::string>> failures;  // op, how its probe ended
  if (!json) {
    std::cout << absl::StrFormat("%-40s %-8s %-13s %-8s %-7s %-40s %s\n", "op", "source", "family",
                                 "accept", "execs", "dtypes", "divergences");
  }
  const std::string only = absl::GetFlag(FLAGS_only);
  for (const ops::OpSpec& s : ops::Catalogue()) {
    const std::string name = s.Qualified();
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    const std::string source = s.rule == ops::Rule::kGeneric ? "generic" : "curated";
    std::vector<std::string> dtypes;
    for (DType d : graph::kAllDTypes) {
      if (ops::Has(s.dtypes, d)) dtypes.emplace_back(std::string(graph::DTypeName(d)));
    }
    std::vector<std::string> one_sided;
    for (DType d : graph::kAllDTypes) {
      if (ops::Has(s.one_sided_dtypes, d)) one_sided.emplace_back(std::string(graph::DTypeName(d)));
    }
    nlohmann::json entry = {{"op", name},
                            {"source", source},
                            {"family", std::string(s.family)},
                            {"dtypes", dtypes},
                            {"one_sided_dtypes", one_sided},
                            {"acceptance", nullptr},
                            {"generated", 0},
                            {"executions", 0},
                            {"divergences", nlohmann::json::object()}};
    if (s.rule == ops::Rule::kGeneric) {
      std::vector<std::string> forms;
      for (const ops::GenericForm& f : s.generic->forms) {
        forms.push_back(absl::StrCat(graph::Sv(graph::DTypeName(f.dtype)), ":",
                                     ops::ShapeFormName(f.shape), f.one_sided ? ":one_sided" : ""));
      }
      entry["forms"] = forms;
    }
    if (stats.contains(name)) {
      const nlohmann::json& st = stats[name];
      entry["acceptance"] = st["acceptance"];
      entry["generated"] = st["generated"];
      entry["executions"] = st["executions"];
      entry["errors"] = st["errors"];
      if (st.contains("failure")) {
        entry["probe_failure"] = st["failure"];
        failures.emplace_back(name, st["failure"].get<std::string>());
      }
      const int64_t g = st["generated"].get<int64_t>(), a = st["accepted"].get<int64_t>();
      for (Agg* agg : {&by_family[std::string(s.family)], &by_source[source]}) {
        agg->generated += g;
        agg->accepted += a;
        ++agg->ops;
      }
      if (g > 0) worst.emplace_back(static_cast<double>(a) / g, name);
    }
    if (auto it = divergences.find(name); it != divergences.end()) {
      for (const auto& [cls, n] : it->second) entry["divergences"][cls] = n;
    }
    if (json) {
      all.push_back(entry);
    } else {
      std::vector<std::string> div;
      for (const auto& [cls, n] : entry["divergences"].items()) {
        div.push_back(absl::StrCat(cls, "=", n.get<int64_t>()));
      }
      const std::string rate =
          entry.contains("probe_failure") ? "failed"
          : entry["acceptance"].is_null()
              ? "-"
              : absl::StrFormat("%.0f%%", 100 * entry["acceptance"].get<double>());
      std::cout << absl::StrFormat("%-40s %-8s %-13s %-8s %-7d %-40s %s\n", name, source, s.family,
                                   rate, entry["executions"].get<int64_t>(),
                                   absl::StrCat(absl::StrJoin(dtypes, " "),
                                                one_sided.empty() ? "" : " one-sided: ",
                                                absl::StrJoin(one_sided, " ")),
                                   absl::StrJoin(div, " "));
    }
  }
  if (json) {
    std::cout << all.dump(2) << "\n";
    return 0;
  }
  int curated = 0, generic = 0;
  for (const ops::OpSpec& s : ops::Catalogue())
    (s.rule == ops::Rule::kGeneric ? generic : curated)++;
  std::cout << absl::StrFormat("\n%d ops: %d curated, %d generic\n", curated + generic, curated,
                               generic);
  if (!stats.empty()) {
    std::cout << "acceptance on " << stats_targets << " (calls accepted / generated):\n";
    for (const auto* group : {&by_source, &by_family}) {
      for (const auto& [k, a] : *group) {
        std::cout << absl::StrFormat("  %-14s %5.1f%%  %6d / %-6d over %d ops\n", k,
                                     a.generated ? 100.0 * a.accepted / a.generated : 0.0,
                                     a.accepted, a.generated, a.ops);
      }
    }
    std::sort(worst.begin(), worst.end());
    std::cout << "ten worst:\n";
    for (size_t i = 0; i < worst.size() && i < 10; ++i) {
      std::cout << absl::StrFormat("  %5.1f%%  %s\n", 100 * worst[i].first, worst[i].second);
    }
    if (!failures.empty()) std::cout << "ops the probe could not finish (left out above):\n";
    for (const auto& [op, failure] : failures) std::cout << "  " << op << ": " << failure << "\n";
  }
  return 0;
}

}  // namespace divfuzz::fuzz
