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
#include "report/report.h"

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
  ReportCorruptIndexLines(FindingsOfWorkFolder(options.work_dir, options.findings_dir), "report");
  absl::StatusOr<std::string> written = report::WriteReport(options);
  if (!written.ok()) {
    std::cerr << "divfuzz report: " << written.status().message() << "\n";
    return absl::IsNotFound(written.status()) || absl::IsInvalidArgument(written.status()) ? 2 : 1;
  }
  std::cout << "report: " << *written << "\n";
  return 0;
}

}  // namespace divfuzz::fuzz
