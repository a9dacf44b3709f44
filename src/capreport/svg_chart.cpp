#include "megasim/capreport/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "capreport/svg_axes.hpp"

namespace megasim {

namespace {

// Data range of all finite values, always including zero (bars and most metrics start at 0).
void value_range(const std::vector<ChartSeries>& series, double& lo, double& hi) {
  lo = 0;
  hi = 0;
  for (const auto& s : series) {
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
}

void close_svg(std::ostringstream& o) { o << "</svg>\n"; }

}  // namespace

std::string svg_line_chart(const ChartSpec& spec, const std::vector<double>& x,
                           const std::vector<ChartSeries>& series) {
  std::ostringstream o;
  svg::open_svg(o, spec);
  const svg::Frame f = svg::make_frame(spec);
  double ylo = 0, yhi = 0;
  value_range(series, ylo, yhi);
  const auto yt = svg::nice_ticks(ylo, yhi, 5);
  const svg::Scale ys{ylo, yhi, f.bottom, f.top, false};
  double xlo = x.empty() ? 1 : x.front(), xhi = x.empty() ? 2 : x.back();
  const bool log_x = spec.log_x && xlo > 0;
  if (xhi <= xlo) xhi = xlo + 1;
  const double pad = (f.width()) * 0.04;
  const svg::Scale xs{xlo, xhi, f.left + pad, f.right - pad, log_x};
  svg::axes(o, spec, f, yt, ys);
  for (double v : x) {  // every x point gets a tick: GPU counts are few and meaningful
    o << "<line x1=\"" << xs(v) << "\" y1=\"" << f.bottom << "\" x2=\"" << xs(v) << "\" y2=\""
      << f.bottom + 5 << "\" stroke=\"#333\"/><text x=\"" << xs(v) << "\" y=\"" << f.bottom + 18
      << "\" text-anchor=\"middle\">" << svg::fmt(v) << "</text>\n";
  }
  std::vector<std::string> names;
  for (std::size_t si = 0; si < series.size(); ++si) {
    const auto& s = series[si];
    names.push_back(s.name);
    std::ostringstream d;
    bool pen = false;
    for (std::size_t i = 0; i < x.size() && i < s.values.size(); ++i) {
      if (!std::isfinite(s.values[i])) {
        pen = false;
        continue;
      }
      d << (pen ? " L" : " M") << xs(x[i]) << ' ' << ys(s.values[i]);
      pen = true;
    }
    o << "<path class=\"series\" d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << svg::colour(si)
      << "\" stroke-width=\"2.5\"/>\n";
    for (std::size_t i = 0; i < x.size() && i < s.values.size(); ++i) {
      if (!std::isfinite(s.values[i])) continue;
      o << "<circle cx=\"" << xs(x[i]) << "\" cy=\"" << ys(s.values[i]) << "\" r=\"4\" fill=\""
        << svg::colour(si) << "\"><title>" << xml_escape(s.name) << " @ " << svg::fmt(x[i]) << ": "
        << svg::fmt(s.values[i]) << "</title></circle>\n";
    }
  }
  svg::legend(o, spec, names, {});
  close_svg(o);
  return o.str();
}

std::string svg_stacked_bar(const ChartSpec& spec, const std::vector<std::string>& categories,
                            const std::vector<ChartSeries>& stacks,
                            const std::optional<ChartSeries>& limit) {
  std::ostringstream o;
  svg::open_svg(o, spec);
  const svg::Frame f = svg::make_frame(spec);
  double yhi = 0;
  for (std::size_t c = 0; c < categories.size(); ++c) {
    double sum = 0;
    for (const auto& s : stacks) {
      if (c < s.values.size() && std::isfinite(s.values[c]) && s.values[c] > 0) sum += s.values[c];
    }
    yhi = std::max(yhi, sum);
    if (limit && c < limit->values.size() && std::isfinite(limit->values[c])) {
      yhi = std::max(yhi, limit->values[c]);
    }
  }
  double ylo = 0;
  const auto yt = svg::nice_ticks(ylo, yhi, 5);
  const svg::Scale ys{ylo, yhi, f.bottom, f.top, false};
  svg::axes(o, spec, f, yt, ys);
  const double n = static_cast<double>(std::max<std::size_t>(categories.size(), 1));
  const double slot = f.width() / n;
  const double bar = std::min(slot * 0.6, 80.0);
  for (std::size_t c = 0; c < categories.size(); ++c) {
    const double cx = f.left + slot * (static_cast<double>(c) + 0.5);
    double base = 0;
    for (std::size_t si = 0; si < stacks.size(); ++si) {
      const double v = c < stacks[si].values.size() ? stacks[si].values[c] : 0.0;
      if (!std::isfinite(v) || v <= 0) continue;
      const double y0 = ys(base), y1 = ys(base + v);
      o << "<rect class=\"bar\" x=\"" << cx - bar / 2 << "\" y=\"" << y1 << "\" width=\"" << bar
        << "\" height=\"" << std::max(y0 - y1, 0.5) << "\" fill=\"" << svg::colour(si) << "\"><title>"
        << xml_escape(categories[c]) << " " << xml_escape(stacks[si].name) << ": " << svg::fmt(v)
        << "</title></rect>\n";
      base += v;
    }
    if (limit && c < limit->values.size() && std::isfinite(limit->values[c])) {
      const double y = ys(limit->values[c]);
      o << "<line class=\"limit\" x1=\"" << cx - bar / 2 - 8 << "\" y1=\"" << y << "\" x2=\""
        << cx + bar / 2 + 8 << "\" y2=\"" << y << "\" stroke=\"" << svg::colour(stacks.size())
        << "\" stroke-width=\"3\" stroke-dasharray=\"4 3\"/>\n";
    }
    o << "<text x=\"" << cx << "\" y=\"" << f.bottom + 18 << "\" text-anchor=\"middle\">"
      << xml_escape(categories[c]) << "</text>\n";
  }
  std::vector<std::string> names;
  std::vector<bool> dashed;
  for (const auto& s : stacks) {
    names.push_back(s.name);
    dashed.push_back(false);
  }
  if (limit) {
    names.push_back(limit->name);
    dashed.push_back(true);
  }
  svg::legend(o, spec, names, dashed);
  close_svg(o);
  return o.str();
}

std::string svg_histogram(const ChartSpec& spec, const std::vector<double>& edges,
                          const std::vector<double>& counts, const std::vector<ChartMarker>& markers) {
  std::ostringstream o;
  svg::open_svg(o, spec);
  const svg::Frame f = svg::make_frame(spec);
  double ylo = 0, yhi = 0;
  for (double c : counts) yhi = std::max(yhi, c);
  const auto yt = svg::nice_ticks(ylo, yhi, 5);
  const svg::Scale ys{ylo, yhi, f.bottom, f.top, false};
  svg::axes(o, spec, f, yt, ys);
  if (edges.size() >= 2 && edges.size() == counts.size() + 1) {
    double xlo = edges.front(), xhi = edges.back();
    const auto xt = svg::nice_ticks(xlo, xhi, 6);
    const svg::Scale xs{xlo, xhi, f.left, f.right, false};
    for (double t : xt) {
      o << "<line x1=\"" << xs(t) << "\" y1=\"" << f.bottom << "\" x2=\"" << xs(t) << "\" y2=\""
        << f.bottom + 5 << "\" stroke=\"#333\"/><text x=\"" << xs(t) << "\" y=\"" << f.bottom + 18
        << "\" text-anchor=\"middle\">" << svg::fmt(t) << "</text>\n";
    }
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const double x0 = xs(edges[i]), x1 = xs(edges[i + 1]);
      const double y = ys(counts[i]);
      o << "<rect class=\"bar\" x=\"" << x0 << "\" y=\"" << y << "\" width=\"" << std::max(x1 - x0 - 1, 0.5)
        << "\" height=\"" << std::max(f.bottom - y, 0.0) << "\" fill=\"" << svg::colour(0)
        << "\"><title>" << svg::fmt(edges[i]) << "-" << svg::fmt(edges[i + 1]) << ": "
        << svg::fmt(counts[i]) << "</title></rect>\n";
    }
    for (std::size_t m = 0; m < markers.size(); ++m) {
      const double x = xs(markers[m].x);
      o << "<line class=\"marker\" x1=\"" << x << "\" y1=\"" << f.top << "\" x2=\"" << x << "\" y2=\""
        << f.bottom << "\" stroke=\"" << svg::colour(m + 1) << "\" stroke-width=\"2\" "
        << "stroke-dasharray=\"5 3\"/><text x=\"" << x + 3 << "\" y=\""
        << f.top + 12 + 14 * static_cast<double>(m) << "\">" << xml_escape(markers[m].label) << "</text>\n";
    }
  }
  std::vector<std::string> names{"trials"};
  std::vector<bool> dashed{false};
  for (const auto& m : markers) {
    names.push_back(m.label);
    dashed.push_back(true);
  }
  svg::legend(o, spec, names, dashed);
  close_svg(o);
  return o.str();
}

}  // namespace megasim
