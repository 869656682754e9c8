#include "store/root_cause_group.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace divfuzz::store {
namespace {

template <typename Json>
std::string Field(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->template get<std::string>() : "";
}

}  // namespace

std::string OpBaseName(absl::string_view root_op) {
  absl::string_view op = root_op;
  if (absl::StartsWith(op, "aten::")) op.remove_prefix(6);
  // The overload follows the last '.' of the name (after any namespace).
  const size_t ns = op.rfind("::");
  const size_t dot = op.find('.', ns == absl::string_view::npos ? 0 : ns + 2);
  if (dot != absl::string_view::npos) op = op.substr(0, dot);
  // In-place variants end in one '_'; dunder names ("__and__") keep theirs.
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.remove_suffix(1);
  return std::string(op);
}

template <typename Json>
RootCauseKey RootCauseKeyOf(const Json& entry) {
  RootCauseKey key;
  key.op = OpBaseName(Field(entry, "root_op"));
  key.cls = Field(entry, "class");
  key.tier = Field(entry, "tier");
  key.wrong_side = Field(entry, "wrong_side");
  static const Json kNoDetail = Json::object();
  auto it = entry.is_object() ? entry.find("detail") : entry.end();
  const Json& detail = it != entry.end() && it->is_object() ? *it : kNoDetail;
  std::string rule = Field(entry, "expected_rule");
  if (rule.empty()) rule = Field(detail, "expected_rule");
  const std::string witness = Field(detail, "witness");
  if (!rule.empty()) {
    key.decided_by = absl::StrCat("rule:", rule);
  } else if (!witness.empty()) {
    key.decided_by = absl::StrCat("witness:", witness);
  }
  key.trigger = Field(detail, "trigger");
  if (key.trigger.empty()) key.trigger = "ordinary";
  return key;
}

template RootCauseKey RootCauseKeyOf(const nlohmann::json&);
template RootCauseKey RootCauseKeyOf(const nlohmann::ordered_json&);

std::string RootCauseKey::Id() const {
  return absl::StrCat(op, "|", cls, "|", tier, "|", wrong_side, "|", decided_by, "|", trigger);
}

std::string RootCauseKey::Label() const {
  std::string label = absl::StrCat(op.empty() ? "?" : op, ": ", cls.empty() ? "?" : cls, " (",
                                   tier.empty() ? "?" : tier, ")");
  if (wrong_side == "undecided") {
    absl::StrAppend(&label, ", side undecided");
  } else if (!wrong_side.empty()) {
    absl::StrAppend(&label, ", ", wrong_side, " wrong");
  }
  if (absl::StartsWith(decided_by, "rule:")) {
    absl::StrAppend(&label, ", rule ", decided_by.substr(5));
  } else if (absl::StartsWith(decided_by, "witness:")) {
    absl::StrAppend(&label, ", witness ", decided_by.substr(8));
  }
  absl::StrAppend(&label, ", ", trigger, " inputs");
  return label;
}

}  // namespace divfuzz::store
