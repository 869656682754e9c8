#include "fuzz/cli/given_flags.h"

#include <string_view>

#include "absl/flags/reflection.h"

namespace divfuzz::fuzz {
namespace {

std::set<std::string>& Given() {
  static auto* given = new std::set<std::string>;
  return *given;
}

}  // namespace

void NoteGivenFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    std::string name(arg.substr(0, arg.find('=')));
    // --noNAME is how Abseil spells a false boolean.
    if (name.size() > 2 && name.compare(0, 2, "no") == 0 &&
        absl::FindCommandLineFlag(name) == nullptr && absl::FindCommandLineFlag(name.substr(2))) {
      name = name.substr(2);
    }
    Given().insert(name);
  }
}

const std::set<std::string>& GivenFlags() { return Given(); }

}  // namespace divfuzz::fuzz
