#include "report/plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/html.h"

namespace divfuzz::report {
namespace {

constexpr int kLeft = 64, kRight = 16, kTop = 34, kBottom = 62;
// Long campaigns sample every 5 s; a plot ~470 px wide shows no more points.
constexpr size_t kMaxPoints = 600;

std::string FormatNumber(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return absl::StrFormat("%gG", v / 1e9);
  if (a >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

struct TimeUnit {
  double seconds;
  const char* name;
};

TimeUnit UnitFor(double max_seconds) {
  if (max_seconds >= 3 * 3600) return {3600, "h"};
  if (max_seconds >= 3 * 60) return {60, "min"};
  return {1, "s"};
}

// Finite points; beyond kMaxPoints, one point per x bin: the mean of a rate
// (so a noisy overnight series reads as its trend), the last value of a
// count.
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& in,
                                            bool step) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : in) {
    if (std::isfinite(p.first) && std::isfinite(p.second)) out.push_back(p);
  }
  if (out.size() <= kMaxPoints) return out;
  const double x0 = out.front().first, x1 = out.back().first;
  const double width = (x1 - x0) / kMaxPoints;
  if (!(width > 0)) return {out.back()};
  std::vector<std::pair<double, double>> thin;
  size_t i = 0;
  while (i < out.size()) {
    const size_t bin = std::min<size_t>(kMaxPoints - 1, (out[i].first - x0) / width);
    double sx = 0, sy = 0;
    size_t n = 0, j = i;
    for (; j < out.size() && std::min<size_t>(kMaxPoints - 1, (out[j].first - x0) / width) == bin;
         ++j, ++n) {
      sx += out[j].first;
      sy += out[j].second;
    }
    thin.push_back(step ? out[j - 1] : std::make_pair(sx / n, sy / n));
    i = j;
  }
  return thin;
}

}  // namespace

std::vector<double> NiceTicks(double max, int target_count) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1};
  // Of the 1-2-5 steps giving 3 to target_count + 2 intervals, the one whose
  // last tick overshoots max least (then the fewest ticks): 12 h ends at 12,
  // not 15.
  const double base = std::pow(10.0, std::floor(std::log10(max)) - 2);
  double best_step = 0, best_end = 0;
  int best_n = 0;
  for (double magnitude = base; magnitude <= max * 10; magnitude *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double step = m * magnitude;
      const int n = static_cast<int>(std::ceil(max / step * (1 - 1e-12)));
      if (n < 3 || n > target_count + 2) continue;
      const double end = n * step;
      if (best_step == 0 || end < best_end * (1 - 1e-12) ||
          (end <= best_end * (1 + 1e-12) && n < best_n)) {
        best_step = step;
        best_end = end;
        best_n = n;
      }
    }
  }
  if (best_step == 0) {  // max below 3 of the smallest step: cannot happen, but be total
    best_step = max;
    best_n = 1;
  }
  std::vector<double> ticks;
  for (int i = 0; i <= best_n; ++i) ticks.push_back(i * best_step);
  return ticks;
}

std::string RenderLinePlot(const PlotSpec& spec) {
  std::vector<std::vector<std::pair<double, double>>> data;
  double max_x = 0, max_y = 0;
  bool any = false;
  for (const Series& s : spec.series) {
    data.push_back(Thin(s.points, s.step));
    for (const auto& [x, y] : data.back()) {
      max_x = std::max(max_x, x);
      max_y = std::max(max_y, y);
      any = true;
    }
  }
  const TimeUnit unit = UnitFor(max_x);
  const std::vector<double> xticks = NiceTicks(max_x / unit.seconds);
  const std::vector<double> yticks = NiceTicks(max_y);
  const double x_end = xticks.back() * unit.seconds, y_end = yticks.back();
  const int w = spec.width, h = spec.height;
  const int pw = w - kLeft - kRight, ph = h - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x_end > 0 ? x / x_end : 0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y_end > 0 ? y / y_end : 0) * ph; };

  std::string svg = absl::StrFormat(
      "<svg id=\"%s\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
      "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n",
      HtmlEscape(spec.id), w, h, w, h, HtmlEscape(spec.title));
  absl::StrAppend(&svg, "<rect x=\"0\" y=\"0\" width=\"", w, "\" height=\"", h,
                  "\" fill=\"#ffffff\"/>\n");
  absl::StrAppend(&svg, "<text class=\"ptitle\" x=\"", kLeft, "\" y=\"20\">",
                  HtmlEscape(spec.title), "</text>\n");
  // Grid and y ticks.
  for (double t : yticks) {
    const double y = py(t);
    absl::StrAppend(&svg,
                    absl::StrFormat("<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
                                    "y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
                                    "text-anchor=\"end\">%s</text>\n",
                                    kLeft, y, kLeft + pw, y, kLeft - 6, y + 4, FormatNumber(t)));
  }
  for (double t : xticks) {
    const double x = px(t * unit.seconds);
    absl::StrAppend(&svg,
                    absl::StrFormat("<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
                                    "y2=\"%d\"/><text class=\"tick\" x=\"%.1f\" y=\"%d\" "
                                    "text-anchor=\"middle\">%s</text>\n",
                                    x, kTop, x, kTop + ph, x, kTop + ph + 16, FormatNumber(t)));
  }
  absl::StrAppend(
      &svg,
      absl::StrFormat("<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
                      "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
                      kLeft, kTop, kLeft, kTop + ph, kLeft, kTop + ph, kLeft + pw, kTop + ph));
  absl::StrAppend(&svg,
                  absl::StrFormat("<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                                  "elapsed (%s)</text>\n",
                                  kLeft + pw / 2, kTop + ph + 32, unit.name));
  absl::StrAppend(&svg,
                  absl::StrFormat("<text class=\"tick\" transform=\"translate(14,%d) rotate(-90)\" "
                                  "text-anchor=\"middle\">%s</text>\n",
                                  kTop + ph / 2, HtmlEscape(spec.y_label)));
  if (!any) {
    absl::StrAppend(&svg, absl::StrFormat("<text class=\"empty\" x=\"%d\" y=\"%d\" "
                                          "text-anchor=\"middle\">no samples yet</text>\n",
                                          kLeft + pw / 2, kTop + ph / 2));
  }
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const Series& s = spec.series[i];
    const auto& pts = data[i];
    if (pts.empty()) continue;
    std::string points;
    for (size_t k = 0; k < pts.size(); ++k) {
      if (s.step && k > 0) {
        absl::StrAppend(&points,
                        absl::StrFormat("%.1f,%.1f ", px(pts[k].first), py(pts[k - 1].second)));
      }
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", px(pts[k].first), py(pts[k].second)));
    }
    absl::StrAppend(&svg, "<polyline class=\"series\" data-series=\"", HtmlEscape(s.name),
                    "\" fill=\"none\" stroke=\"", HtmlEscape(s.color),
                    "\" stroke-width=\"3\" stroke-linejoin=\"round\" points=\"", points, "\"/>\n");
    if (pts.size() == 1) {
      absl::StrAppend(&svg,
                      absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n",
                                      px(pts[0].first), py(pts[0].second), HtmlEscape(s.color)));
    }
  }
  // Legend under the x-axis label.
  double lx = kLeft;
  const int ly = h - 12;
  for (const Series& s : spec.series) {
    absl::StrAppend(
        &svg, absl::StrFormat("<rect x=\"%.1f\" y=\"%d\" width=\"14\" height=\"4\" "
                              "fill=\"%s\"/><text class=\"tick\" x=\"%.1f\" y=\"%d\">%s"
                              "</text>\n",
                              lx, ly - 4, HtmlEscape(s.color), lx + 18, ly, HtmlEscape(s.name)));
    lx += 28 + 7.0 * s.name.size();
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace divfuzz::report
