// References for the normalizations, from their documented definitions: the
// exact mean and biased variance of each normalized group (correctly rounded
// sums in MPFR), y = (x - mean) / sqrt(var + eps) * w + b rounded once.
// layer_norm, group_norm, batch_norm and instance_norm return y; their
// native_* forms also return the statistics autograd saves (mean and
// 1/sqrt(var + eps)), which are compared like y, so every row of those is
// evaluated whatever `only` says. rms_norm: x / sqrt(mean(x^2) + eps) * w.
#include <ATen/ops/empty.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "exec/exact_internal.h"
#include "exec/references/references.h"
#include "ops/infer.h"
#include "ops/kernel_classes.h"

namespace divfuzz::exec::exact_internal {
namespace {

using graph::DType;
using graph::Literal;
constexpr mpfr_rnd_t N = MPFR_RNDN;

// An optional tensor argument: nullopt when malformed, an undefined tensor
// when None or absent.
std::optional<at::Tensor> OptionalTensor(const graph::Node& node, size_t pos,
                                         absl::string_view name,
                                         const std::map<std::string, at::Tensor>& values) {
  const Literal* l = ops::FindArg(node, pos, name);
  if (l == nullptr || l->kind == Literal::Kind::kNone) return at::Tensor();
  std::optional<at::Tensor> t = TensorArg(node, pos, name, values);
  if (!t) return std::nullopt;
  return t->contiguous().reshape({-1});
}

// How a normalization layer groups x: the statistics of each row of
// `view` reduced over `reduce`, and the channel of row r's element j (which
// weight, bias and running statistic apply).
struct NormLayout {
  at::Tensor view;
  std::vector<int64_t> reduce;
  std::function<int64_t(int64_t row, int64_t j)> channel;
};

// y = (x - mean) / sqrt(var + eps) * w + b, with the biased variance of each
// row (or the running statistics, by channel), rounded once. With
// `stats_shape` (batch statistics only), outputs 1 and 2 are each row's mean and
// 1/sqrt(var + eps) in `stats_shape`, as the native_* ops return them.
std::optional<ExactResult> Normalize(const NormLayout& layout, const at::Tensor& w,
                                     const at::Tensor& b, const at::Tensor& running_mean,
                                     const at::Tensor& running_var, double eps,
                                     const std::vector<int64_t>& shape, DType dtype,
                                     const at::Tensor& only,
                                     const std::vector<int64_t>* stats_shape = nullptr) {
  std::optional<Rows> rows = ToRows(layout.view, layout.reduce, /*keepdim=*/true);
  if (!rows || rows->m.size(1) == 0 || rows->m.numel() > kMaxElements) return std::nullopt;
  const int64_t outer = rows->m.size(0), inner = rows->m.size(1);
  const double* p = rows->m.data_ptr<double>();
  auto at_channel = [](const at::Tensor& t, int64_t c, double* v) {
    if (!t.defined()) return true;
    if (c < 0 || c >= t.numel()) return false;
    *v = t.data_ptr<double>()[c];
    return true;
  };
  const bool running = running_mean.defined();
  const std::vector<bool> wanted = WantedRows(only, layout.view, layout.reduce);
  if (stats_shape != nullptr && running) return std::nullopt;
  Sink sink{dtype == DType::kF32}, means{dtype == DType::kF32}, rstds{dtype == DType::kF32};
  Mp mean, var, rstd, y, t;
  for (int64_t r = 0; r < outer; ++r) {
    const double* row = p + r * inner;
    if (Skipped(wanted, r)) {
      PutNans(inner, sink);
      PutNans(1, means);
      PutNans(1, rstds);
      continue;
    }
    if (!running) {
      MeanAndSquaredDeviations(row, inner, mean.v, var.v);
      mpfr_div_si(var.v, var.v, inner, N);
      mpfr_add_d(rstd.v, var.v, eps, N);
      mpfr_rec_sqrt(rstd.v, rstd.v, N);
      means.Put(mean.v);
      rstds.Put(rstd.v);
    }
    for (int64_t k = 0; k < inner; ++k) {
      const int64_t c = layout.channel(r, k);
      double wv = 1, bv = 0, m = 0, v = 0;
      if (!at_channel(w, c, &wv) || !at_channel(b, c, &bv)) return std::nullopt;
      if (running) {
        if (!at_channel(running_mean, c, &m) || !at_channel(running_var, c, &v)) return std::nullopt;
        mpfr_set_d(mean.v, m, N);
        mpfr_set_d(rstd.v, v, N);
        mpfr_add_d(rstd.v, rstd.v, eps, N);
        mpfr_rec_sqrt(rstd.v, rstd.v, N);
      }
      mpfr_set_d(y.v, row[k], N);
      mpfr_sub(y.v, y.v, mean.v, N);
      mpfr_mul(y.v, y.v, rstd.v, N);
      mpfr_mul_d(y.v, y.v, wv, N);
      mpfr_add_d(y.v, y.v, bv, N);
      sink.Put(y.v);
    }
  }
  ExactResult er;
  er.result = FromRows(sink, *rows, dtype, &shape);
  if (stats_shape != nullptr) {
    for (const Sink* s : {&means, &rstds}) {
      NodeResult stat = s->Result(*stats_shape, dtype);
      er.result.outputs.push_back(stat.outputs[0]);
      er.result.exact.push_back(stat.exact[0]);
    }
  }
  return er;
}

// The normalized dims of layer_norm and rms_norm (the last k, as
// `normalized_shape` names them), or nullopt where the kernels raise.
std::optional<std::vector<int64_t>> TrailingDims(const graph::Node& node,
                                                 const std::vector<int64_t>& shape) {
  std::optional<std::vector<int64_t>> normalized = DimsArg(node, 1, "normalized_shape");
  if (!normalized || normalized->empty() || normalized->size() > shape.size()) return std::nullopt;
  const size_t k = normalized->size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < k; ++d) {
    if ((*normalized)[d] != shape[shape.size() - k + d]) return std::nullopt;
    dims.push_back(static_cast<int64_t>(shape.size() - k + d));
  }
  return dims;
}

// layer_norm, group_norm, batch_norm and instance_norm (the functional ops).
std::optional<ExactResult> NormalizationLayer(absl::string_view f, const graph::Node& node,
                                              const at::Tensor& x,
                                              const std::map<std::string, at::Tensor>& values,
                                              DType dtype, const at::Tensor& only) {
  const std::vector<int64_t> shape = x.sizes().vec();
  NormLayout layout;
  std::optional<at::Tensor> w, b, rm = at::Tensor(), rv = at::Tensor();
  std::optional<double> eps;
  if (f == "layer_norm") {  // (input, normalized_shape, weight, bias, eps, cudnn_enable)
    std::optional<std::vector<int64_t>> dims = TrailingDims(node, shape);
    if (!dims) return std::nullopt;
    layout.reduce = *dims;
    layout.view = x;
    layout.channel = [](int64_t, int64_t j) { return j; };
    w = OptionalTensor(node, 2, "weight", values);
    b = OptionalTensor(node, 3, "bias", values);
  } else if (f == "group_norm") {  // (input, num_groups, weight, bias, eps, cudnn_enabled)
    std::optional<double> groups = NumberArg(node, 1, "num_groups", std::nan(""));
    if (!groups || !(*groups >= 1) || shape.size() < 2) return std::nullopt;
    const int64_t G = static_cast<int64_t>(*groups), C = shape[1];
    if (C % G != 0) return std::nullopt;  // the kernels raise
    const int64_t spatial = shape[0] == 0 || C == 0 ? 0 : x.numel() / (shape[0] * C);
    layout.view = x.reshape({shape[0], G, (C / G) * spatial});
    layout.reduce = {2};
    layout.channel = [=](int64_t r, int64_t j) { return (r % G) * (C / G) + j / spatial; };
    w = OptionalTensor(node, 2, "weight", values);
    b = OptionalTensor(node, 3, "bias", values);
  } else {
    // batch_norm(input, weight, bias, running_mean, running_var, training,
    // momentum, eps, cudnn_enabled); instance_norm likewise, with
    // use_input_stats for training.
    std::optional<double> training = NumberArg(node, 5, f == "batch_norm" ? "training" : "use_input_stats", std::nan(""));
    if (!training || std::isnan(*training) || shape.size() < 2) return std::nullopt;
    w = OptionalTensor(node, 1, "weight", values);
    b = OptionalTensor(node, 2, "bias", values);
    if (*training == 0) {
      rm = OptionalTensor(node, 3, "running_mean", values);
      rv = OptionalTensor(node, 4, "running_var", values);
      if (!rm || !rv || !rm->defined() || !rv->defined()) return std::nullopt;
    }
    const int64_t C = shape[1];
    if (f == "batch_norm") {
      std::vector<int64_t> reduce = {0};
      for (size_t d = 2; d < shape.size(); ++d) reduce.push_back(static_cast<int64_t>(d));
      layout.view = x;
      layout.reduce = reduce;
      layout.channel = [](int64_t r, int64_t) { return r; };
    } else {
      layout.view = x.reshape({shape[0], C, -1});
      layout.reduce = {2};
      layout.channel = [=](int64_t r, int64_t) { return r % C; };
    }
  }
  // eps where the op's schema puts it (ops::NormalizationEpsOf, declared once).
  eps = ops::NormalizationEpsOf(node, dtype);
  if (!w || !b || !rm || !rv || !eps || std::isnan(*eps)) return std::nullopt;
  return Normalize(layout, *w, *b, *rm, *rv, *eps, shape, dtype, only);
}


// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (y, mean,
// rstd), the statistics in input.shape[:-k] + [1] * k;
// native_group_norm(input, weight, bias, N, C, HxW, group, eps), the
// statistics in [N, group]; native_batch_norm and _native_batch_norm_legit
// (input, weight, bias, running_mean, running_var, training, momentum, eps):
// in training the batch's statistics per channel, [C]; in evaluation the
// running ones normalize and the statistics are empty, as ATen returns them.
std::optional<ExactResult> NativeNormalization(absl::string_view f, const graph::Node& node,
                                               const at::Tensor& x,
                                               const std::map<std::string, at::Tensor>& values,
                                               DType dtype) {
  const std::vector<int64_t> shape = x.sizes().vec();
  std::optional<double> eps = ops::NormalizationEpsOf(node, dtype);
  if (!eps || std::isnan(*eps)) return std::nullopt;
  NormLayout layout;
  std::vector<int64_t> stats_shape;
  std::optional<at::Tensor> w, b;
  if (f == "native_layer_norm") {
    std::optional<std::vector<int64_t>> dims = TrailingDims(node, shape);
    if (!dims) return std::nullopt;
    layout.view = x;
    layout.reduce = *dims;
    layout.channel = [](int64_t, int64_t j) { return j; };
    stats_shape = shape;
    for (int64_t d : *dims) stats_shape[d] = 1;
    w = OptionalTensor(node, 2, "weight", values);
    b = OptionalTensor(node, 3, "bias", values);
  } else if (f == "native_group_norm") {
    std::optional<double> n = NumberArg(node, 3, "N", std::nan(""));
    std::optional<double> c = NumberArg(node, 4, "C", std::nan(""));
    std::optional<double> hw = NumberArg(node, 5, "HxW", std::nan(""));
    std::optional<double> g = NumberArg(node, 6, "group", std::nan(""));
    if (!n || !c || !hw || !g || !(*g >= 1) || shape.size() < 2) return std::nullopt;
    const int64_t Nn = static_cast<int64_t>(*n), C = static_cast<int64_t>(*c);
    const int64_t spatial = static_cast<int64_t>(*hw), G = static_cast<int64_t>(*g);
    // The kernels raise on a mismatch (or read what the sizes say).
    if (Nn != shape[0] || C != shape[1] || C % G != 0 || Nn * C * spatial != x.numel()) {
      return std::nullopt;
    }
    layout.view = x.reshape({Nn, G, (C / G) * spatial});
    layout.reduce = {2};
    layout.channel = [=](int64_t r, int64_t j) { return (r % G) * (C / G) + j / spatial; };
    stats_shape = {Nn, G};
    w = OptionalTensor(node, 1, "weight", values);
    b = OptionalTensor(node, 2, "bias", values);
  } else {  // native_batch_norm, _native_batch_norm_legit
    std::optional<double> training = NumberArg(node, 5, "training", std::nan(""));
    if (!training || std::isnan(*training) || shape.size() < 2) return std::nullopt;
    w = OptionalTensor(node, 1, "weight", values);
    b = OptionalTensor(node, 2, "bias", values);
    if (!w || !b) return std::nullopt;
    std::vector<int64_t> reduce = {0};
    for (size_t d = 2; d < shape.size(); ++d) reduce.push_back(static_cast<int64_t>(d));
    layout.view = x;
    layout.reduce = reduce;
    layout.channel = [](int64_t r, int64_t) { return r; };
    if (*training == 0) {
      std::optional<at::Tensor> rm = OptionalTensor(node, 3, "running_mean", values);
      std::optional<at::Tensor> rv = OptionalTensor(node, 4, "running_var", values);
      if (!rm || !rv || !rm->defined() || !rv->defined()) return std::nullopt;
      std::optional<ExactResult> er =
          Normalize(layout, *w, *b, *rm, *rv, *eps, shape, dtype, at::Tensor());
      if (!er) return std::nullopt;
      const at::Tensor empty = at::empty({0}, er->result.outputs[0].options());
      const at::Tensor empty_exact = at::empty({0}, at::kDouble);
      for (int k = 0; k < 2; ++k) {
        er->result.outputs.push_back(empty);
        er->result.exact.push_back(empty_exact);
      }
      return er;
    }
    stats_shape = {shape[1]};
  }
  if (!w || !b) return std::nullopt;
  return Normalize(layout, *w, *b, at::Tensor(), at::Tensor(), *eps, shape, dtype, at::Tensor(),
                   &stats_shape);
}

// rms_norm(input, normalized_shape, weight=None, eps=None): y = x /
// sqrt(mean(x^2) + eps) * w over the last k dims, rounded once; eps None is
// the epsilon of the input's opmath dtype (ops::NormalizationEpsOf).
std::optional<ExactResult> RmsNorm(const graph::Node& node, const at::Tensor& x,
                                   const std::map<std::string, at::Tensor>& values, DType dtype,
                                   const at::Tensor& only) {
  const std::vector<int64_t> shape = x.sizes().vec();
  std::optional<std::vector<int64_t>> dims = TrailingDims(node, shape);
  std::optional<at::Tensor> w = OptionalTensor(node, 2, "weight", values);
  std::optional<double> eps = ops::NormalizationEpsOf(node, dtype);
  if (!dims || !w || !eps || std::isnan(*eps)) return std::nullopt;
  std::optional<Rows> rows = ToRows(x, *dims, /*keepdim=*/true);
  if (!rows || rows->m.size(1) == 0 || rows->m.numel() > kMaxElements) return std::nullopt;
  const int64_t outer = rows->m.size(0), inner = rows->m.size(1);
  if (w->defined() && w->numel() != inner) return std::nullopt;
  const double* p = rows->m.data_ptr<double>();
  const std::vector<bool> wanted = WantedRows(only, x, *dims);
  Sink sink{dtype == DType::kF32};
  Mp rstd, y;
  for (int64_t r = 0; r < outer; ++r) {
    const double* row = p + r * inner;
    if (Skipped(wanted, r)) {
      PutNans(inner, sink);
      continue;
    }
    std::vector<Mp> terms;
    for (int64_t k = 0; k < inner; ++k) {
      terms.emplace_back(row[k]);
      mpfr_sqr(terms.back().v, terms.back().v, N);
    }
    Sum(terms, rstd.v);
    mpfr_div_si(rstd.v, rstd.v, inner, N);
    mpfr_add_d(rstd.v, rstd.v, *eps, N);
    mpfr_rec_sqrt(rstd.v, rstd.v, N);
    for (int64_t k = 0; k < inner; ++k) {
      mpfr_set_d(y.v, row[k], N);
      mpfr_mul(y.v, y.v, rstd.v, N);
      if (w->defined()) mpfr_mul_d(y.v, y.v, w->data_ptr<double>()[k], N);
      sink.Put(y.v);
    }
  }
  ExactResult er;
  er.result = FromRows(sink, *rows, dtype);
  return er;
}

}  // namespace

bool IsNormalizationName(absl::string_view f) {
  return f == "layer_norm" || f == "group_norm" || f == "batch_norm" || f == "instance_norm" ||
         f == "native_layer_norm" || f == "native_group_norm" || f == "native_batch_norm" ||
         f == "_native_batch_norm_legit" || f == "rms_norm";
}

std::optional<ExactResult> RunNormalization(absl::string_view f, const graph::Node& node,
                                            const at::Tensor& x,
                                            const std::map<std::string, at::Tensor>& values,
                                            DType dtype, const at::Tensor& only) {
  if (f == "rms_norm") return RmsNorm(node, x, values, dtype, only);
  if (absl::StartsWith(f, "native_") || absl::StartsWith(f, "_native_")) {
    return NativeNormalization(f, node, x, values, dtype);
  }
  return NormalizationLayer(f, node, x, values, dtype, only);
}

absl::string_view NormalizationMethod(absl::string_view f) {
  if (f == "rms_norm") return "the exact mean of squares in MPFR";
  return "the exact mean and biased variance in MPFR";
}

}  // namespace divfuzz::exec::exact_internal
