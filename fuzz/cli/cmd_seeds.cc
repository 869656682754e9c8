// divfuzz seeds: a seed corpus with programs from every op family, each
// checked to run on the CPU without argument errors, so a campaign starts
// from every corner of the catalogue instead of waiting for mutation to
// reach it.
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "graph/printer.h"
#include "mutators/mutator.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

// Every node ran on the CPU (errors other than bad arguments are findings,
// not invalid seeds) and at least one node is of the family.
bool RunsOnCpu(const graph::Program& p, const std::string& family) {
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  if (!types.ok()) return false;
  bool of_family = false;
  for (const graph::Node& n : p.nodes) {
    const ops::OpSpec* spec = ops::FindOp(n.QualifiedName());
    of_family = of_family || (spec != nullptr && std::string(spec->family) == family);
  }
  if (!of_family) return false;
  const exec::RunResult r = exec::Run(p, *types, exec::Target::kCpu);
  if (!r.setup_error.empty()) return false;
  for (const exec::NodeResult& n : r.nodes) {
    if (n.error && n.error->kind == exec::NodeError::Kind::kBadArguments) return false;
  }
  return true;
}

}  // namespace

int RunSeeds(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "divfuzz seeds: unexpected argument '" << args[0] << "' (use --out=DIR)\n";
    return 2;
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  const int per_family = absl::GetFlag(FLAGS_per_family);
  if (out.empty() || per_family < 1) {
    std::cerr << "divfuzz seeds: needs --out=DIR and --per_family >= 1\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::cerr << "divfuzz seeds: cannot create " << out << ": " << ec.message() << "\n";
    return 2;
  }
  std::set<std::string> families;
  for (const ops::OpSpec& s : ops::Catalogue()) families.insert(std::string(s.family));
  int written = 0, missing = 0;
  for (const std::string& family : families) {
    int made = 0;
    for (uint64_t seed = 1; seed <= 200 && made < per_family; ++seed) {
      mutators::GenerateOptions options;
      options.family = family;
      options.max_nodes = 3;
      const graph::Program p = mutators::Generate(seed * 7919 + family.size(), options);
      if (p.nodes.empty()) break;
      if (!RunsOnCpu(p, family)) continue;
      const std::string path = absl::StrCat(out, "/", family, "-", ++made, ".dfz");
      std::string text = graph::PrintProgram(p);
      // A comment after the header line says where the file came from.
      text.insert(text.find('\n') + 1,
                  absl::StrCat("# Seed for the '", family,
                               "' family, written by `divfuzz seeds` (runs on the CPU).\n"));
      if (absl::Status s = store::WriteFileAtomically(path, text); !s.ok()) {
        std::cerr << "divfuzz seeds: " << s.message() << "\n";
        return 2;
      }
      ++written;
    }
    if (made == 0) {
      ++missing;
      std::cerr << "divfuzz seeds: no runnable program for family '" << family << "'\n";
    }
  }
  std::cout << "divfuzz seeds: " << written << " programs for " << families.size() - missing
            << " of " << families.size() << " families in " << out << "/\n";
  return missing == 0 ? 0 : 1;
}

}  // namespace divfuzz::fuzz
