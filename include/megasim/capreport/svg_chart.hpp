#pragma once
// Small self-contained SVG charts for the capacity report: line chart, stacked bar chart and
// histogram. Output is a standalone <svg> element (inline in HTML, no scripts, no network),
// with a title, axis labels carrying units, and a legend. Deterministic text output.
#include <optional>
#include <string>
#include <vector>

namespace megasim {

struct ChartSeries {
  std::string name;
  std::vector<double> values;  // one per x point / category; NaN = no value (gap)
};

struct ChartSpec {
  std::string title;
  std::string x_label;  // with unit, e.g. "GPUs"
  std::string y_label;  // with unit, e.g. "step time (s)"
  int width = 760;
  int height = 380;
  bool log_x = false;   // GPU counts span decades: log2 axis
  std::string id;       // element id (for the page's self-check and anchors)
};

// Lines with point markers over numeric x (ascending).
std::string svg_line_chart(const ChartSpec& spec, const std::vector<double>& x,
                           const std::vector<ChartSeries>& series);

// One bar per category, the series stacked bottom-up. An optional `limit` series is drawn as
// a dashed marker per bar (e.g. the GPU memory capacity).
std::string svg_stacked_bar(const ChartSpec& spec, const std::vector<std::string>& categories,
                            const std::vector<ChartSeries>& stacks,
                            const std::optional<ChartSeries>& limit = std::nullopt);

// Bars over bin edges (edges.size() == counts.size() + 1); `markers` are labelled vertical
// lines (e.g. p10 / p50 / p90).
struct ChartMarker {
  std::string label;
  double x = 0;
};
std::string svg_histogram(const ChartSpec& spec, const std::vector<double>& edges,
                          const std::vector<double>& counts, const std::vector<ChartMarker>& markers);

// Escapes &, <, >, " and ' for XML/HTML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace megasim
