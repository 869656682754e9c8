// divfuzz ops: the catalogue as a table or JSON.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "fuzz/commands.h"
#include "fuzz/flags.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"

namespace divfuzz::fuzz {

int RunOps(const std::vector<std::string>&) {
  nlohmann::json all = nlohmann::json::array();
  if (!absl::GetFlag(FLAGS_json)) {
    std::cout << absl::StrFormat("%-28s %-9s %-12s %s\n", "op", "source", "family", "dtypes");
  }
  for (const ops::OpSpec& s : ops::Catalogue()) {
    std::vector<std::string> dtypes;
    for (graph::DType d : graph::kAllDTypes) {
      if (ops::Has(s.dtypes, d)) dtypes.emplace_back(std::string(graph::DTypeName(d)));
    }
    if (absl::GetFlag(FLAGS_json)) {
      all.push_back({{"op", s.Qualified()},
                     {"source", "curated"},
                     {"family", std::string(s.family)},
                     {"dtypes", dtypes}});
    } else {
      std::cout << absl::StrFormat("%-28s %-9s %-12s %s\n", s.Qualified(), "curated", s.family,
                                   absl::StrJoin(dtypes, " "));
    }
  }
  if (absl::GetFlag(FLAGS_json)) std::cout << all.dump(2) << "\n";
  return 0;
}

}  // namespace divfuzz::fuzz
