#include "fuzz/campaign/artifact_files.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/harness/crash_hang_triage.h"
#include "fuzz/harness/harness.h"
#include "fuzz/harness/inflight.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

namespace fs = std::filesystem;

// The worker's in-flight record keeps the real input of an empty artifact
// (SaveInflightArtifact): a handler writing on a heap the kernel corrupted
// may leave the file and never its bytes.
bool FailedWrite(const std::string& path, const std::string& data) {
  return data.empty() && !absl::EndsWith(path, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

bool KillerArtifact(const std::string& name) {
  return (absl::StartsWith(name, "crash-") || absl::StartsWith(name, "timeout-") ||
          absl::StartsWith(name, "oom-") || absl::StartsWith(name, kMpsFaultPrefix)) &&
         !absl::EndsWith(name, ".log") && !absl::EndsWith(name, kTargetsSuffix) &&
         !absl::StrContains(name, store::kAtomicWriteInfix);
}

std::optional<std::string> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string SaveInflightArtifact(const std::string& record, const std::string& crashes_dir,
                                 const std::string& prefix, const std::string& targets) {
  const std::optional<std::string> input = ReadInflight(record);
  ClearInflight(record);
  if (!input) return "";
  auto note_targets = [&](const std::string& artifact) {
    if (targets.empty()) return;
    if (absl::Status s = store::WriteFileAtomically(artifact + kTargetsSuffix, targets + "\n");
        !s.ok()) {
      std::cerr << "divfuzz campaign: writing " << artifact << kTargetsSuffix
                << " failed: " << s.message() << "\n";
    }
  };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(crashes_dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code size_ec;
    if (!KillerArtifact(name) || fs::file_size(entry.path(), size_ec) != input->size() || size_ec) {
      continue;
    }
    if (ReadBytes(entry.path().string()) == input) {  // libFuzzer's own artifact
      note_targets(entry.path().string());
      return "";
    }
  }
  const std::string path = absl::StrCat(
      crashes_dir, "/", prefix, "inflight-",
      absl::Hex(InputHash(reinterpret_cast<const uint8_t*>(input->data()), input->size()),
                absl::kZeroPad16));
  // The targets first: the triage thread may pick the artifact up at once.
  note_targets(path);
  if (absl::Status s = store::WriteFileAtomically(path, *input); !s.ok()) {
    std::cerr << "divfuzz campaign: saving the input a worker died on failed: " << s.message()
              << "\n";
    return "";
  }
  return path;
}

std::string ArtifactTargets(const std::string& artifact) {
  const std::optional<std::string> own = ReadBytes(artifact + kTargetsSuffix);
  return own ? std::string(absl::StripAsciiWhitespace(*own)) : "";
}

void WriteSkipList(const std::string& crashes_dir, const std::set<std::string>& quarantine,
                   const std::string& path) {
  std::string text;
  for (const std::string& op : quarantine) absl::StrAppend(&text, "op ", op, "\n");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(crashes_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!KillerArtifact(name)) continue;
    const std::optional<std::string> data = ReadBytes(crashes_dir + "/" + name);
    if (!data || FailedWrite(name, *data)) continue;
    absl::StrAppend(
        &text, absl::Hex(InputHash(reinterpret_cast<const uint8_t*>(data->data()), data->size())),
        "\n");
  }
  if (absl::Status s = store::WriteFileAtomically(path, text); !s.ok()) {
    std::cerr << "divfuzz campaign: writing " << path << " failed: " << s.message() << "\n";
  }
}

}  // namespace divfuzz::fuzz
