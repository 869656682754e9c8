// A replacement worker's corpus. libFuzzer runs every input of its corpus
// folders before it mutates anything, so a worker that replaces a dead one
// (a crash; all of them at once when a CUDA fault restarts the campaign's
// MPS server) spent minutes there: on the H200, 1,800 inputs at 7 per second
// and worker, while the campaign's rate fell from 500 to 50 programs/s. A
// replacement starts instead from a sample of the corpus in a folder of its
// own, whose new inputs the supervisor links into the shared corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace divfuzz::fuzz {

// The number of files in `dir` (0 when it does not exist).
size_t CountFiles(const std::string& dir);

// Creates `dir` with hard links (copies where links fail) to `count` files of
// `corpus`, chosen at random with `seed`. Returns how many it holds.
absl::StatusOr<size_t> SampleCorpus(const std::string& corpus, const std::string& dir,
                                    size_t count, uint64_t seed);

// Removes a sampled folder (its files, then itself). Not
// std::filesystem::remove_all: libtorch.so exports its own copy of it, which
// crashes a process that links libtorch.
void RemoveCorpusFolder(const std::string& dir);

// Links into `corpus` every file of `from` that it lacks (libFuzzer names an
// input by its SHA-1: one name, one content). Returns how many.
size_t MergeInto(const std::string& from, const std::string& corpus);

}  // namespace divfuzz::fuzz
