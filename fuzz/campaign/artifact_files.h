// The files in a campaign's crashes/ folder: which are inputs that killed a
// worker, the in-flight input a dead worker leaves, the targets a worker with
// CUDA switches ran, and the skip list the workers read. Kept apart from the
// replay (artifact_replay.h) so the tests link it.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace divfuzz::fuzz {

// libFuzzer names an artifact after the SHA-1 of its input; an empty file
// under any other name is a write its handler never finished.
bool FailedWrite(const std::string& path, const std::string& data);

// An input that killed a worker: libFuzzer's crash-, timeout- and oom-
// files, and the in-flight ones saved beside them (not logs, targets files
// or unfinished atomic writes).
bool KillerArtifact(const std::string& name);

// The file's bytes, or nullopt.
std::optional<std::string> ReadBytes(const std::string& path);

// The suffix of an artifact's targets file (SaveInflightArtifact).
inline constexpr const char* kTargetsSuffix = ".targets";

// Saves the input a dead worker was running (its in-flight record,
// fuzz/harness/inflight.h) as crashes_dir/<prefix>inflight-<InputHash> when libFuzzer
// left no artifact of those bytes, and clears the record. Returns the path
// written, or "" when there was nothing to save. With `targets` (a worker
// whose CUDA side carries switches, --cuda_variants), the artifact holding
// the input gets <artifact>.targets beside it, and its replay runs those
// targets: without the switch a crash under `cuda+magma` does not recur.
std::string SaveInflightArtifact(const std::string& record, const std::string& crashes_dir,
                                 const std::string& prefix, const std::string& targets = "");

// The targets an artifact's worker ran (its .targets file), or "" for the
// campaign's own.
std::string ArtifactTargets(const std::string& artifact);

// Writes what workers skip to `path` (their DIVFUZZ_SKIP_INPUTS, which they
// read again when it changes): the InputHash of every crash-/timeout-/oom-
// artifact in crashes_dir (hex, one a line), so an input that killed a
// worker is not run again even before it is replayed or where its op stays
// unnamed, and "op NAME" for each quarantined op.
void WriteSkipList(const std::string& crashes_dir, const std::set<std::string>& quarantine,
                   const std::string& path);

}  // namespace divfuzz::fuzz
