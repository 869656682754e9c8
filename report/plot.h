// Inline SVG line plots for the HTML report (no scripts, no fonts beyond the
// page's own).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace divfuzz::report {

struct Series {
  std::string name;
  std::string color;                              // CSS colour of the line and its legend swatch
  std::vector<std::pair<double, double>> points;  // (elapsed seconds, value)
  bool step = false;                              // counts: hold the value until the next sample
};

struct PlotSpec {
  std::string id;  // the <svg> element's id
  std::string title;
  std::string y_label;
  int width = 560;
  int height = 300;
  std::vector<Series> series;
};

// An <svg> element: axes with ticks (x in s, min or h by range), one
// polyline per series (class "series", data-series=name) and a legend.
// Non-finite points are dropped; an empty plot says "no samples yet".
std::string RenderLinePlot(const PlotSpec& spec);

// Tick values from 0 covering [0, max]: 1, 2 or 5 times a power of ten apart.
std::vector<double> NiceTicks(double max, int target_count = 5);

}  // namespace divfuzz::report
