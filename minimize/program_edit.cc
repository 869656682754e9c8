#include "minimize/program_edit.h"

#include <ATen/ops/view_as_real.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "exec/dtype_convert.h"
#include "graph/dtype.h"
#include "graph/materialize.h"

namespace divfuzz::minimize {
namespace {

using graph::Literal;

void RenameLiteral(Literal& l, const std::map<std::string, std::string>& renames) {
  if (l.kind == Literal::Kind::kValue) {
    auto it = renames.find(l.s);
    if (it != renames.end()) l.s = it->second;
  }
  for (Literal& item : l.list) RenameLiteral(item, renames);
}

}  // namespace

std::vector<std::string> Uses(const graph::Node& node) { return node.Uses(); }

void RenameUses(graph::Program& program, const std::map<std::string, std::string>& renames) {
  if (renames.empty()) return;
  for (graph::Node& node : program.nodes) {
    for (graph::Argument& a : node.args) RenameLiteral(a.value, renames);
  }
  for (std::string& o : program.outputs) {
    auto it = renames.find(o);
    if (it != renames.end()) o = it->second;
  }
}

graph::Program Slice(const graph::Program& program, const std::vector<std::string>& live) {
  std::set<std::string> needed(live.begin(), live.end());
  std::vector<bool> keep(program.nodes.size(), false);
  for (int i = static_cast<int>(program.nodes.size()) - 1; i >= 0; --i) {
    const graph::Node& node = program.nodes[i];
    bool used = false;
    for (const std::string& r : node.results) used = used || needed.count(r) > 0;
    if (!used) continue;
    keep[i] = true;
    for (const std::string& u : Uses(node)) needed.insert(u);
  }
  graph::Program out;
  out.version = program.version;
  for (const graph::Input& in : program.inputs) {
    if (needed.count(in.name)) out.inputs.push_back(in);
  }
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    if (keep[i]) out.nodes.push_back(program.nodes[i]);
  }
  out.outputs = live;
  return out;
}

std::optional<graph::Program> CutNodes(const graph::Program& program, const ops::TypeEnv& types,
                                       const exec::RunResult& run, const std::set<int>& cut,
                                       bool bypass, const std::vector<std::string>& live) {
  graph::Program p = program;
  std::map<std::string, std::string> renames;
  std::vector<graph::Input> frozen;
  const auto type_of = [&types](const std::string& v) -> const graph::TensorType* {
    auto it = types.find(v);
    return it == types.end() ? nullptr : &it->second;
  };
  for (int i : cut) {
    if (i < 0 || static_cast<size_t>(i) >= program.nodes.size()) return std::nullopt;
    const graph::Node& node = program.nodes[i];
    for (size_t j = 0; j < node.results.size(); ++j) {
      const std::string& r = node.results[j];
      const graph::TensorType* rt = type_of(r);
      if (rt == nullptr) return std::nullopt;
      std::optional<std::string> by;
      if (bypass) {
        for (const std::string& u : Uses(node)) {
          const graph::TensorType* ut = type_of(u);
          if (ut != nullptr && *ut == *rt) {
            auto it = renames.find(u);  // an earlier cut node: its own replacement
            by = it == renames.end() ? u : it->second;
            break;
          }
        }
      }
      if (by) {
        renames[r] = *by;
        continue;
      }
      if (static_cast<size_t>(i) >= run.nodes.size() || run.nodes[i].error ||
          j >= run.nodes[i].outputs.size()) {
        return std::nullopt;
      }
      std::optional<graph::Input> in = FrozenInput(r, *rt, run.nodes[i].outputs[j]);
      if (!in) return std::nullopt;
      frozen.push_back(std::move(*in));
    }
  }
  std::vector<graph::Node> nodes;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (!cut.count(static_cast<int>(i))) nodes.push_back(std::move(p.nodes[i]));
  }
  p.nodes = std::move(nodes);
  for (graph::Input& in : frozen) p.inputs.push_back(std::move(in));
  std::vector<std::string> kept_live = live;
  RenameUses(p, renames);
  for (std::string& v : kept_live) {
    auto it = renames.find(v);
    if (it != renames.end()) v = it->second;
  }
  return Slice(p, kept_live);
}

std::set<int> Ancestors(const graph::Program& program, int node) {
  std::map<std::string, int> producer;
  for (int i = 0; i < node && i < static_cast<int>(program.nodes.size()); ++i) {
    for (const std::string& r : program.nodes[i].results) producer[r] = i;
  }
  std::set<int> out;
  std::vector<int> stack = {node};
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (n < 0 || n >= static_cast<int>(program.nodes.size())) continue;
    for (const std::string& u : Uses(program.nodes[n])) {
      auto it = producer.find(u);
      if (it != producer.end() && it->second < n && out.insert(it->second).second) {
        stack.push_back(it->second);
      }
    }
  }
  return out;
}

int64_t InputElements(const graph::Program& program) {
  int64_t total = 0;
  for (const graph::Input& in : program.inputs) total += std::max<int64_t>(0, in.type.Numel());
  return total;
}

std::optional<graph::Input> FrozenInput(const std::string& name, const graph::TensorType& type,
                                        const at::Tensor& value, int64_t max_elements) {
  if (!value.defined()) return std::nullopt;
  const std::optional<graph::DType> dt = exec::FromScalarType(value.scalar_type());
  if (!dt || *dt != type.dtype) return std::nullopt;
  if (std::vector<int64_t>(value.sizes().begin(), value.sizes().end()) != type.shape) {
    return std::nullopt;
  }
  const int64_t numel = value.numel();
  if (numel > max_elements) return std::nullopt;
  graph::Input in;
  in.name = name;
  in.type = type;
  if (numel == 0) {
    in.payload.kind = graph::Payload::Kind::kFill;
    in.payload.values = {0.0};
    return in;
  }
  at::Tensor t = value.contiguous();
  if (graph::IsComplex(type.dtype)) t = at::view_as_real(t);
  std::vector<double> values;
  if (graph::IsIntegral(type.dtype) || type.dtype == graph::DType::kBool) {
    const at::Tensor l = t.to(at::kLong).contiguous().reshape({-1});
    const int64_t* p = l.data_ptr<int64_t>();
    for (int64_t i = 0; i < l.numel(); ++i) {
      const double d = static_cast<double>(p[i]);
      if (d >= 0x1p63 || static_cast<int64_t>(d) != p[i]) return std::nullopt;
      values.push_back(d);
    }
  } else {
    const at::Tensor d = t.to(at::kDouble).contiguous().reshape({-1});
    const double* p = d.data_ptr<double>();
    values.assign(p, p + d.numel());
  }
  in.payload.kind = graph::Payload::Kind::kValues;
  in.payload.values = std::move(values);
  return in;
}

graph::Input ResizeInput(const graph::Input& input, const std::vector<int>& kept,
                         const std::vector<int64_t>& sizes, const std::vector<int64_t>& offsets,
                         bool slice_generators) {
  graph::Input out = input;
  out.type.shape = sizes;
  const graph::Payload::Kind kind = input.payload.kind;
  if (kind == graph::Payload::Kind::kFill) return out;
  if (kind != graph::Payload::Kind::kValues && !slice_generators) return out;
  const std::vector<double> old = graph::MaterializePayload(input);
  const std::vector<int64_t>& old_shape = input.type.shape;
  const size_t per = graph::IsComplex(input.type.dtype) ? 2 : 1;
  // Row-major strides of the old shape.
  std::vector<int64_t> stride(old_shape.size(), 1);
  for (int d = static_cast<int>(old_shape.size()) - 2; d >= 0; --d) {
    stride[d] = stride[d + 1] * old_shape[d + 1];
  }
  const int64_t numel = out.type.Numel();
  std::vector<double> values;
  values.reserve(static_cast<size_t>(std::max<int64_t>(0, numel)) * per);
  // The window's first element.
  int64_t base = 0;
  for (size_t d = 0; d < offsets.size() && d < old_shape.size(); ++d) {
    base += offsets[d] * stride[d];
  }
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t e = 0; e < numel; ++e) {
    int64_t flat = base;
    for (size_t k = 0; k < sizes.size(); ++k) flat += index[k] * stride[kept[k]];
    for (size_t p = 0; p < per; ++p) {
      const size_t at = static_cast<size_t>(flat) * per + p;
      values.push_back(at < old.size() ? old[at] : 0.0);
    }
    for (int k = static_cast<int>(sizes.size()) - 1; k >= 0; --k) {
      if (++index[k] < sizes[k]) break;
      index[k] = 0;
    }
  }
  if (numel <= 0) {
    out.payload = graph::Payload{};
    out.payload.kind = graph::Payload::Kind::kFill;
    out.payload.values = {0.0};
    return out;
  }
  out.payload = graph::Payload{};
  out.payload.kind = graph::Payload::Kind::kValues;
  out.payload.values = std::move(values);
  return out;
}

double RoundDigits(double v, int digits, graph::DType dtype) {
  if (!std::isfinite(v) || v == 0) return v;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", std::max(1, digits), v);
  const graph::DType part = dtype == graph::DType::kC64    ? graph::DType::kF32
                            : dtype == graph::DType::kC128 ? graph::DType::kF64
                                                           : dtype;
  return graph::RoundToDType(part, std::strtod(buf, nullptr));
}

}  // namespace divfuzz::minimize
