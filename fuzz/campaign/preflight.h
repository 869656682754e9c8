// The campaign's checks before any worker starts: a folder it will write to
// exists or can be created, is a folder, is writable and (the findings store)
// can be locked. Before these checks a read-only findings store cost a whole
// campaign: every worker logged the failed write and the summary said
// "buckets: 0"; a regular file given as --findings made every worker die at
// start.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace divfuzz::fuzz {

// Creates `path` (and its parents) when missing, then checks that it is a
// folder and that a file can be created, written and removed in it; with
// `lock`, also that `path`/.lock can be opened and flock'ed (what the findings
// store does around every write). Errors read
// "<flag>=<path>: <path> <problem> (<what was expected>)", e.g.
// "--findings=/ro/f: cannot create a file in /ro/f: Read-only file system".
absl::Status CheckWritableFolder(const std::string& flag, const std::string& path, bool lock);

}  // namespace divfuzz::fuzz
