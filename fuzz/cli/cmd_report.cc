// divfuzz report DIR: the campaign's HTML report (report/report.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "nlohmann/json.hpp"
#include "fuzz/campaign/baseline_replay.h"
#include "report/report.h"
#include "store/baseline.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

// The store the report reads (report::ReportOptions): `flag` when given, else
// campaign.json's "findings" (relative to the work folder), else
// <work>/../findings.
std::string FindingsOfWorkFolder(const std::string& work, const std::string& flag) {
  namespace fs = std::filesystem;
  if (!flag.empty()) return flag;
  std::ifstream in(fs::path(work) / "campaign.json");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("findings") && j["findings"].is_string()) {
    const fs::path named = j["findings"].get<std::string>();
    return (named.is_absolute() ? named : fs::path(work) / named).lexically_normal().string();
  }
  return (fs::path(work) / ".." / "findings").lexically_normal().string();
}

}  // namespace

int RunReport(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "usage: divfuzz report DIR [--findings=F] [--out=FILE]\n"
                 "  DIR: a campaign's work folder (stats.csv, campaign.json)\n";
    return 2;
  }
  report::ReportOptions options;
  options.work_dir = args[0];
  // --findings has a default for campaign; here only a value other than the
  // default wins over campaign.json and DIR/../findings (this Abseil keeps
  // IsSpecifiedOnCommandLine private).
  const absl::CommandLineFlag* findings = absl::FindCommandLineFlag("findings");
  if (findings != nullptr && findings->CurrentValue() != findings->DefaultValue()) {
    options.findings_dir = absl::GetFlag(FLAGS_findings);
  }
  options.out = absl::GetFlag(FLAGS_out);
  const std::string findings_dir = FindingsOfWorkFolder(options.work_dir, options.findings_dir);
  ReportCorruptIndexLines(findings_dir, "report");
  if (const std::string path = absl::GetFlag(FLAGS_baseline); !path.empty()) {
    // The explicit step: mark new or known, replay the known bugs.
    absl::StatusOr<store::Baseline> baseline = store::LoadBaseline(path);
    if (!baseline.ok()) {
      std::cerr << "divfuzz report: " << baseline.status().message() << "\n";
      return 2;
    }
    std::vector<nlohmann::json> index;
    if (auto store = store::FindingsStore::Open(findings_dir); store.ok()) {
      if (auto loaded = (*store)->Load(); loaded.ok()) index = *std::move(loaded);
      std::map<std::string, std::string> marks;
      for (const nlohmann::json& e : index) marks[e.value("id", "")] = baseline->StatusOf(e);
      if (absl::Status s = (*store)->Annotate("baseline", marks); !s.ok()) {
        std::cerr << "divfuzz report: marking buckets new or known failed: " << s.message() << "\n";
      }
    }
    const std::vector<KnownBugCheck> checks = ReplayKnownBugs(
        *baseline, index, ResolveTargets(absl::GetFlag(FLAGS_targets)),
        absl::GetFlag(FLAGS_timeout), options.work_dir + "/logs", std::cerr);
    if (absl::Status s =
            WriteKnownBugChecks(options.work_dir + "/baseline_check.json", baseline->path, checks);
        !s.ok()) {
      std::cerr << "divfuzz report: " << s.message() << "\n";
      return 2;
    }
    std::cout << KnownBugChecksText(checks);
  }
  absl::StatusOr<std::string> written = report::WriteReport(options);
  if (!written.ok()) {
    std::cerr << "divfuzz report: " << written.status().message() << "\n";
    return absl::IsNotFound(written.status()) || absl::IsInvalidArgument(written.status()) ? 2 : 1;
  }
  std::cout << "report: " << *written << "\n";
  return 0;
}

}  // namespace divfuzz::fuzz
