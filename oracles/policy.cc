#include "oracles/policy.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

extern const char kDivfuzzDefaultPolicy[];

namespace divfuzz::oracles {

const std::vector<RuleInfo>& AllRules() {
  static const std::vector<RuleInfo> rules = {
#define DIVFUZZ_RULE(name, meaning) {#name, meaning},
#include "oracles/rules.def"
  };
  return rules;
}

bool* RuleSwitch(Policy::Rules& rules, absl::string_view name) {
#define DIVFUZZ_RULE(rule, meaning) \
  if (name == #rule) return &rules.rule;
#include "oracles/rules.def"
  return nullptr;
}

const bool* RuleSwitch(const Policy::Rules& rules, absl::string_view name) {
  return RuleSwitch(const_cast<Policy::Rules&>(rules), name);
}
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
    if (!name.empty() && name[0] == '_') continue;  // "_source" and other notes
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
  auto lookup = [&](const std::string& name) -> const Tolerance* {
    auto o = overrides.find(name);
    if (o == overrides.end()) return nullptr;
    auto t = o->second.find(key);
    return t == o->second.end() ? nullptr : &t->second;
  };
  if (const Tolerance* t = lookup(op)) return *t;
  // "aten::name" covers every overload "aten::name.overload" without an entry of its own.
  const size_t ns = op.find("::");
  if (const size_t dot = op.find('.', ns == std::string::npos ? 0 : ns + 2);
      dot != std::string::npos) {
    if (const Tolerance* t = lookup(op.substr(0, dot))) return *t;
  }
  if (auto t = defaults.find(key); t != defaults.end()) return t->second;
  return DefaultTolerance(dtype);
}

namespace {

// torch.testing.assert_close's table, every rule on: what a policy file amends.
Policy BaseDefaults() {
  Policy p;
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    p.defaults[d] = DefaultTolerance(d);
  }
  return p;
}

}  // namespace

Policy DefaultPolicy() {
  static const Policy* shipped = [] {
    absl::StatusOr<Policy> p = ParsePolicy(kDivfuzzDefaultPolicy, "oracles/default_policy.json");
    if (!p.ok()) {  // a build from a broken file: its tests say so
      std::cerr << "divfuzz: the built-in policy does not parse: " << p.status().message() << "\n";
      return new Policy(BaseDefaults());
    }
    return new Policy(*std::move(p));
  }();
  return *shipped;
}

absl::StatusOr<Policy> ParsePolicy(const std::string& json_text, const std::string& filename) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad(filename, "expected a JSON object (the file does not parse)");
  if (!j.is_object()) return Bad(filename, "expected a JSON object at the top level");
  Policy p = BaseDefaults();
  for (const auto& [key, value] : j.items()) {
    if (!key.empty() && key[0] == '_') continue;  // "_doc", "_overrides_source"
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
      for (const auto& [name, on] : value.items()) {
        bool* sw = RuleSwitch(p.rules, name);
        if (sw == nullptr || !on.is_boolean()) {
          std::string names;
          for (const RuleInfo& r : AllRules()) absl::StrAppend(&names, names.empty() ? "" : ", ", r.name);
          return Bad(filename, absl::StrCat("expected rules.", name, " to be one of ", names,
                                            " with a bool value"));
        }
        *sw = on.get<bool>();
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
