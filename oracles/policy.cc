#include "oracles/policy.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace divfuzz::oracles {
namespace {

using graph::DType;

absl::Status Bad(const std::string& filename, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(filename, ": ", what));
}

absl::StatusOr<std::map<DType, Tolerance>> ParseTable(const nlohmann::json& j,
                                                      const std::string& filename,
                                                      const std::string& where) {
  if (!j.is_object()) return Bad(filename, absl::StrCat("expected an object at ", where));
  std::map<DType, Tolerance> out;
  for (const auto& [name, entry] : j.items()) {
    std::optional<DType> d = graph::ParseDType(name);
    if (!d || !(graph::IsFloating(*d))) {
      return Bad(filename, absl::StrCat("expected a floating dtype (f16, bf16, f32, f64) at ",
                                        where, ", got '", name, "'"));
    }
    if (!entry.is_object() || !entry.contains("rtol") || !entry.contains("atol") ||
        !entry["rtol"].is_number() || !entry["atol"].is_number() ||
        entry["rtol"].get<double>() < 0 || entry["atol"].get<double>() < 0) {
      return Bad(filename,
                 absl::StrCat("expected {\"rtol\": number >= 0, \"atol\": number >= 0} at ", where,
                              ".", name));
    }
    out[*d] = Tolerance{entry["rtol"].get<double>(), entry["atol"].get<double>()};
  }
  return out;
}

}  // namespace

Tolerance Policy::For(const std::string& op, DType dtype) const {
  // Complex dtypes use their parts' entry; integers are exact.
  const DType key = dtype == DType::kC64    ? DType::kF32
                    : dtype == DType::kC128 ? DType::kF64
                                            : dtype;
  if (auto o = overrides.find(op); o != overrides.end()) {
    if (auto t = o->second.find(key); t != o->second.end()) return t->second;
  }
  if (auto t = defaults.find(key); t != defaults.end()) return t->second;
  return DefaultTolerance(dtype);
}

Policy DefaultPolicy() {
  Policy p;
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    p.defaults[d] = DefaultTolerance(d);
  }
  return p;
}

absl::StatusOr<Policy> ParsePolicy(const std::string& json_text, const std::string& filename) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad(filename, "expected a JSON object (the file does not parse)");
  if (!j.is_object()) return Bad(filename, "expected a JSON object at the top level");
  Policy p = DefaultPolicy();
  for (const auto& [key, value] : j.items()) {
    if (key == "_doc") continue;
    if (key == "defaults") {
      absl::StatusOr<std::map<DType, Tolerance>> t = ParseTable(value, filename, "defaults");
      if (!t.ok()) return t.status();
      for (const auto& [d, tol] : *t) p.defaults[d] = tol;
    } else if (key == "overrides") {
      if (!value.is_object()) return Bad(filename, "expected an object at overrides");
      for (const auto& [op, table] : value.items()) {
        absl::StatusOr<std::map<DType, Tolerance>> t =
            ParseTable(table, filename, absl::StrCat("overrides.", op));
        if (!t.ok()) return t.status();
        p.overrides[op] = *t;
      }
    } else if (key == "rules") {
      if (!value.is_object()) return Bad(filename, "expected an object at rules");
      const std::map<std::string, bool*> known = {
          {"info_gated", &p.rules.info_gated},
          {"index_ties", &p.rules.index_ties},
          {"float_to_int_casts", &p.rules.float_to_int_casts},
          {"ill_conditioned", &p.rules.ill_conditioned},
          {"cancelling_reductions", &p.rules.cancelling_reductions},
          {"tf32", &p.rules.tf32},
          {"documented_nondeterminism", &p.rules.documented_nondeterminism}};
      for (const auto& [name, on] : value.items()) {
        auto it = known.find(name);
        if (it == known.end() || !on.is_boolean()) {
          return Bad(filename, absl::StrCat("expected rules.", name,
                                            " to be one of info_gated, index_ties, "
                                            "float_to_int_casts, ill_conditioned, "
                                            "cancelling_reductions, tf32, "
                                            "documented_nondeterminism with a bool value"));
        }
        *it->second = on.get<bool>();
      }
    } else {
      return Bad(filename, absl::StrCat("expected defaults, overrides or rules, got '", key, "'"));
    }
  }
  return p;
}

absl::StatusOr<Policy> LoadPolicy(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the policy file"));
  std::stringstream text;
  text << in.rdbuf();
  return ParsePolicy(text.str(), path);
}

}  // namespace divfuzz::oracles
