// Which flags the command line named, whatever their values (Abseil keeps
// that private): `campaign --resume` refuses settings it would ignore.
#pragma once

#include <set>
#include <string>

namespace divfuzz::fuzz {

// Records the flag names in argv[1..argc) ("--seconds=5", "-seconds 5" and
// "--noflag" give "seconds" and "flag"); stops at "--".
void NoteGivenFlags(int argc, char** argv);

// The names recorded by NoteGivenFlags.
const std::set<std::string>& GivenFlags();

}  // namespace divfuzz::fuzz
