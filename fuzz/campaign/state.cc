#include "fuzz/campaign/state.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::DataLossError(absl::StrCat(path, ": expected a JSON object (file corrupt?)"));
  }
  return j;
}

}  // namespace

nlohmann::json CampaignState::ToJson() const {
  return {{"elapsed_seconds", elapsed_seconds},
          {"restarts", restarts},
          {"generations", generations},
          {"resumes", resumes},
          {"handled_artifacts", handled_artifacts},
          {"quarantine", quarantine}};
}

CampaignState CampaignState::FromJson(const nlohmann::json& j) {
  CampaignState s;
  s.elapsed_seconds = j.value("elapsed_seconds", 0.0);
  s.restarts = j.value("restarts", 0);
  s.generations = j.value("generations", 0);
  s.resumes = j.value("resumes", 0);
  s.handled_artifacts = j.value("handled_artifacts", std::set<std::string>{});
  s.quarantine = j.value("quarantine", std::set<std::string>{});
  return s;
}

namespace {

// Calls f(slot, stats) for every readable logs/stats-<slot>-<generation>.json;
// a worker killed before its first write has none.
template <typename F>
void ForEachWorkerStats(const std::string& work, const F& f) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(fs::path(work) / "logs", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    int slot = -1, generation = -1;
    if (std::sscanf(it->path().filename().string().c_str(), "stats-%d-%d.json", &slot,
                    &generation) != 2) {
      continue;
    }
    absl::StatusOr<nlohmann::json> j = ReadJsonFile(it->path().string());
    if (j.ok()) f(slot, *j);
  }
}

}  // namespace

nlohmann::json SumWorkerStats(const std::string& work) {
  nlohmann::json total = {{"executions", 0},
                          {"roots_by_tier", nlohmann::json::object()},
                          {"moved_by_rules", 0},
                          {"quarantined", 0},
                          {"over_budget", 0},
                          {"one_sided", 0},
                          {"gradient_programs", 0},
                          {"triage_judged", 0},
                          {"triage_reused", 0},
                          {"batches", 0},
                          {"variant_cases", 0},
                          {"isolated_queued", 0},
                          {"isolated_dropped", 0},
                          {"declined_by_op", nlohmann::json::object()},
                          {"phases", nlohmann::json::object()}};
  ForEachWorkerStats(work, [&](int, const nlohmann::json& j) {
    for (const char* key :
         {"executions", "moved_by_rules", "quarantined", "over_budget", "one_sided", "gradient_programs", "triage_judged", "triage_reused", "batches",
          "variant_cases", "isolated_queued", "isolated_dropped"}) {
      if (j.contains(key) && j[key].is_number_integer()) {
        total[key] = total[key].get<int64_t>() + j[key].get<int64_t>();
      }
    }
    // Seconds per phase (fuzz/harness/phase_clock.h), summed over workers.
    if (j.contains("phases") && j["phases"].is_object()) {
      nlohmann::json& into = total["phases"];
      for (const auto& [phase, v] : j["phases"].items()) {
        if (v.is_number()) {
          into[phase] = into.value(phase, 0.0) + v.get<double>();
        } else if (v.is_object()) {
          if (!into.contains(phase) || !into[phase].is_object()) into[phase] = nlohmann::json::object();
          for (const char* k : {"wall", "cpu"}) {
            if (v.contains(k) && v[k].is_number()) {
              into[phase][k] = into[phase].value(k, 0.0) + v[k].get<double>();
            }
          }
        }
      }
    }
    for (const char* key : {"roots_by_tier", "declined_by_op"}) {
      if (!j.contains(key) || !j[key].is_object()) continue;
      for (const auto& [name, n] : j[key].items()) {
        if (n.is_number_integer()) {
          total[key][name] = total[key].value(name, int64_t{0}) + n.get<int64_t>();
        }
      }
    }
  });
  return total;
}

std::vector<int64_t> ExecutionsPerWorker(const std::string& work, int workers) {
  std::vector<int64_t> per(std::max(0, workers), 0);
  ForEachWorkerStats(work, [&](int slot, const nlohmann::json& j) {
    if (slot >= 0 && slot < workers && j.contains("executions") &&
        j["executions"].is_number_integer()) {
      per[slot] += j["executions"].get<int64_t>();
    }
  });
  return per;
}

namespace {

// `path` relative to the work folder when it lies inside it or beside it
// ("../findings": what travels with a copy of both); absolute otherwise, so a
// copy elsewhere still finds a store or seed corpus far from it.
std::string RelativeToWork(const std::string& work, const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path base = fs::absolute(work, ec).lexically_normal();
  const fs::path target = fs::absolute(path, ec).lexically_normal();
  const fs::path rel = target.lexically_relative(base);
  int ups = 0;
  for (const fs::path& part : rel) ups += part == "..";
  if (rel.empty() || ups > 1) return target.string();
  return rel.string();
}

std::string ResolveInWork(const std::string& work, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  std::error_code ec;
  return (fs::absolute(work, ec) / path).lexically_normal().string();
}

}  // namespace

absl::Status SaveConfig(const std::string& work, const CampaignConfig& config) {
  CampaignConfig relative = config;
  relative.findings = RelativeToWork(work, config.findings);
  relative.policy = RelativeToWork(work, config.policy);
  for (std::string& seed : relative.seeds) seed = RelativeToWork(work, seed);
  return store::WriteFileAtomically(work + "/campaign.json", relative.ToJson().dump(2) + "\n");
}

absl::StatusOr<CampaignConfig> LoadConfig(const std::string& work) {
  const std::string path = work + "/campaign.json";
  if (!fs::exists(path)) {
    return absl::NotFoundError(
        absl::StrCat(path, " not found: ", work, " is not a campaign folder (nothing to resume)"));
  }
  absl::StatusOr<nlohmann::json> j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  absl::StatusOr<CampaignConfig> c = CampaignConfig::FromJson(*j, path);
  if (!c.ok()) return c;
  c->findings = ResolveInWork(work, c->findings);
  c->policy = ResolveInWork(work, c->policy);
  for (std::string& seed : c->seeds) seed = ResolveInWork(work, seed);
  return c;
}

absl::Status SaveState(const std::string& work, const CampaignState& state) {
  return store::WriteFileAtomically(work + "/state.json", state.ToJson().dump() + "\n");
}

absl::StatusOr<CampaignState> LoadState(const std::string& work) {
  const std::string path = work + "/state.json";
  if (!fs::exists(path)) return CampaignState{};
  absl::StatusOr<nlohmann::json> j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  return CampaignState::FromJson(*j);
}

CampaignState RebuildState(const std::string& work, const CampaignConfig& config) {
  CampaignState s;
  // The last complete row of stats.csv: elapsed_s is its first column.
  std::ifstream csv(work + "/stats.csv");
  std::string line;
  while (std::getline(csv, line)) {
    double elapsed = 0;
    if (std::sscanf(line.c_str(), "%lf,", &elapsed) == 1 && elapsed >= 0) {
      s.elapsed_seconds = elapsed;
    }
  }
  std::error_code ec;
  for (auto it = fs::directory_iterator(fs::path(work) / "logs", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int slot = -1, generation = -1;
    if (std::sscanf(name.c_str(), "stats-%d-%d.json", &slot, &generation) == 2 ||
        std::sscanf(name.c_str(), "worker-%d-%d.log", &slot, &generation) == 2) {
      s.generations = std::max(s.generations, generation + 1);
    }
  }
  s.restarts = std::max(0, s.generations - config.workers);
  for (auto it = fs::directory_iterator(fs::path(work) / "crashes", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    s.handled_artifacts.insert(it->path().filename().string());
  }
  if (auto store = store::FindingsStore::Open(config.findings); store.ok()) {
    if (auto index = (*store)->Load(); index.ok()) {
      for (const nlohmann::json& e : *index) {
        const std::string cls = e.value("class", "");
        const nlohmann::json detail = e.value("detail", nlohmann::json::object());
        if ((cls == "crash" || cls == "hang") && detail.is_object() &&
            detail.value("reproduced", false) && !e.value("root_op", "").empty() &&
            e.value("root_op", "")[0] != '<') {
          s.quarantine.insert(e.value("root_op", ""));
        }
      }
    }
  }
  return s;
}

void TrimPartialCsvRow(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (text.empty() || text.back() == '\n') return;
  const size_t keep = text.rfind('\n');
  (void)store::WriteFileAtomically(path, keep == std::string::npos ? "" : text.substr(0, keep + 1));
}

}  // namespace divfuzz::fuzz
