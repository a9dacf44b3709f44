#pragma once
// Private helpers shared by the SVG charts: plot frame, "nice" ticks, number formatting,
// colour palette, legend.
#include <sstream>
#include <string>
#include <vector>

#include "megasim/capreport/svg_chart.hpp"

namespace megasim::svg {

// Plot area inside the chart, in SVG pixels.
struct Frame {
  double left = 78, top = 44, right = 0, bottom = 0;  // right/bottom = absolute coordinates
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};

Frame make_frame(const ChartSpec& spec);

// Linear map from a data range onto a pixel range.
struct Scale {
  double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
  bool log2 = false;
  double operator()(double v) const;
};

// About `target` round tick values covering [lo, hi] (1-2-5 steps); lo/hi are widened to ticks.
std::vector<double> nice_ticks(double& lo, double& hi, int target);

// Short human format: 1234567 -> "1.23M", 0.552 -> "0.552", 12288 -> "12288".
std::string fmt(double v);

// Fixed palette, colour-blind friendly (Okabe-Ito).
const char* colour(std::size_t i);

void open_svg(std::ostringstream& o, const ChartSpec& spec);
void axes(std::ostringstream& o, const ChartSpec& spec, const Frame& f,
          const std::vector<double>& yticks, const Scale& ys);
void legend(std::ostringstream& o, const ChartSpec& spec, const std::vector<std::string>& names,
            const std::vector<bool>& dashed);

}  // namespace megasim::svg
