#include "graph/program.h"

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
      return seed == o.seed;
  }
  return false;
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
  return name == o.name && type == o.type && payload == o.payload;
}

std::string Node::QualifiedName() const { return overload.empty() ? op : op + "." + overload; }

bool Node::operator==(const Node& o) const {
  return results == o.results && op == o.op && overload == o.overload && args == o.args;
}

bool Program::operator==(const Program& o) const {
  return version == o.version && inputs == o.inputs && nodes == o.nodes && outputs == o.outputs;
}

}  // namespace divfuzz::graph
