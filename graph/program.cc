#include "graph/program.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace divfuzz::graph {
namespace {

// Bitwise, so that -0.0 != 0.0 and a NaN equals the same NaN: the round trip
// is checked bit for bit.
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameBits(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

int64_t TensorType::Numel() const {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d == 0) return 0;
    if (__builtin_mul_overflow(n, d, &n)) overflow = true;
  }
  return overflow ? std::numeric_limits<int64_t>::max() : n;
}

bool Payload::operator==(const Payload& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kFill:
    case Kind::kValues:
      return SameBits(values, o.values);
    case Kind::kUniform:
    case Kind::kNormal:
      return seed == o.seed && SameBits(a, o.a) && SameBits(b, o.b);
    case Kind::kSpecial:
    case Kind::kLimits:
    case Kind::kEdges:
    case Kind::kPlanted:
    case Kind::kSingular:
    case Kind::kNearSingular:
    case Kind::kSpd:
      return seed == o.seed;
    case Kind::kTies:
    case Kind::kDynamic:
    case Kind::kRankDeficient:
    case Kind::kIllConditioned:
    case Kind::kScaled:
      return seed == o.seed && SameBits(a, o.a);
  }
  return false;
}

namespace {

struct PayloadKindInfo {
  Payload::Kind kind;
  std::string_view name;
  std::string_view param;  // the one parameter besides seed (later kinds)
  double param_default;
  bool matrix;
};

// Defaults: the rank-1 case, cond 1e6 (beyond f16/bf16, within f32), 8 decades.
constexpr PayloadKindInfo kPayloadKinds[] = {
    {Payload::Kind::kFill, "fill", "", 0, false},
    {Payload::Kind::kValues, "values", "", 0, false},
    {Payload::Kind::kUniform, "uniform", "", 0, false},
    {Payload::Kind::kNormal, "normal", "", 0, false},
    {Payload::Kind::kSpecial, "special", "", 0, false},
    {Payload::Kind::kLimits, "limits", "", 0, false},
    {Payload::Kind::kEdges, "edges", "", 0, false},
    {Payload::Kind::kTies, "ties", "distinct", 3, false},
    {Payload::Kind::kDynamic, "dynamic", "decades", 8, false},
    {Payload::Kind::kPlanted, "planted", "", 0, false},
    {Payload::Kind::kSingular, "singular", "", 0, true},
    {Payload::Kind::kNearSingular, "near_singular", "", 0, true},
    {Payload::Kind::kRankDeficient, "rank_deficient", "rank", 1, true},
    {Payload::Kind::kIllConditioned, "ill_conditioned", "cond", 1e6, true},
    {Payload::Kind::kSpd, "spd", "", 0, true},
    {Payload::Kind::kScaled, "scaled", "decades", 8, true},
};

const PayloadKindInfo& InfoOf(Payload::Kind kind) {
  for (const PayloadKindInfo& info : kPayloadKinds) {
    if (info.kind == kind) return info;
  }
  return kPayloadKinds[0];
}

constexpr std::string_view kLayoutNames[] = {"contiguous", "transposed", "strided",
                                             "channels_last"};

}  // namespace

std::string_view PayloadKindName(Payload::Kind kind) { return InfoOf(kind).name; }

std::optional<Payload::Kind> ParsePayloadKind(std::string_view name) {
  for (const PayloadKindInfo& info : kPayloadKinds) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

std::string_view PayloadParamName(Payload::Kind kind) { return InfoOf(kind).param; }
double PayloadParamDefault(Payload::Kind kind) { return InfoOf(kind).param_default; }
bool IsMatrixPayload(Payload::Kind kind) { return InfoOf(kind).matrix; }

std::string_view LayoutName(Layout layout) { return kLayoutNames[static_cast<int>(layout)]; }

std::optional<Layout> ParseLayout(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (kLayoutNames[i] == name) return static_cast<Layout>(i);
  }
  return std::nullopt;
}

Literal Literal::Bool(bool v) {
  Literal l;
  l.kind = Kind::kBool;
  l.b = v;
  return l;
}

Literal Literal::Int(int64_t v) {
  Literal l;
  l.kind = Kind::kInt;
  l.i = v;
  return l;
}

Literal Literal::Float(double v) {
  Literal l;
  l.kind = Kind::kFloat;
  l.f = v;
  return l;
}

Literal Literal::String(std::string v) {
  Literal l;
  l.kind = Kind::kString;
  l.s = std::move(v);
  return l;
}

Literal Literal::OfDType(DType v) {
  Literal l;
  l.kind = Kind::kDType;
  l.dtype = v;
  return l;
}

Literal Literal::Value(std::string name) {
  Literal l;
  l.kind = Kind::kValue;
  l.s = std::move(name);
  return l;
}

Literal Literal::List(std::vector<Literal> items) {
  Literal l;
  l.kind = Kind::kList;
  l.list = std::move(items);
  return l;
}

bool Literal::operator==(const Literal& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return b == o.b;
    case Kind::kInt:
      return i == o.i;
    case Kind::kFloat:
      return SameBits(f, o.f);
    case Kind::kString:
    case Kind::kValue:
      return s == o.s;
    case Kind::kDType:
      return dtype == o.dtype;
    case Kind::kList:
      return list == o.list;
  }
  return false;
}

bool Input::operator==(const Input& o) const {
  return name == o.name && type == o.type && layout == o.layout && payload == o.payload;
}

std::string Node::QualifiedName() const { return overload.empty() ? op : op + "." + overload; }

namespace {
void CollectUses(const Literal& l, std::vector<std::string>* uses) {
  if (l.kind == Literal::Kind::kValue &&
      std::find(uses->begin(), uses->end(), l.s) == uses->end()) {
    uses->push_back(l.s);
  }
  for (const Literal& item : l.list) CollectUses(item, uses);
}
}  // namespace

std::vector<std::string> Node::Uses() const {
  std::vector<std::string> uses;
  for (const Argument& a : args) CollectUses(a.value, &uses);
  return uses;
}

bool Node::operator==(const Node& o) const {
  return results == o.results && op == o.op && overload == o.overload && args == o.args;
}

bool Program::operator==(const Program& o) const {
  return version == o.version && inputs == o.inputs && nodes == o.nodes && outputs == o.outputs;
}

}  // namespace divfuzz::graph
