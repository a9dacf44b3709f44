#include "capreport/svg_axes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace megasim {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace svg {

Frame make_frame(const ChartSpec& spec) {
  Frame f;
  f.right = spec.width - 24.0;
  f.bottom = spec.height - 86.0;  // room for the x label and the legend below it
  return f;
}

double Scale::operator()(double v) const {
  double a = d0, b = d1, x = v;
  if (log2) {
    a = std::log2(d0);
    b = std::log2(d1);
    x = std::log2(v);
  }
  if (b == a) return (p0 + p1) / 2;
  return p0 + (x - a) / (b - a) * (p1 - p0);
}

std::vector<double> nice_ticks(double& lo, double& hi, int target) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1.0 : std::fabs(lo) * 0.1);
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (raw <= step) break;
  }
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> t;
  for (double v = lo; v <= hi + step * 1e-6; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string fmt(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e12) std::snprintf(buf, sizeof buf, "%.3gT", v / 1e12);
  else if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e5) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.6g", v);  // 12288, not 1.229e+04
  return buf;
}

const char* colour(std::size_t i) {
  static constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                              "#CC79A7", "#56B4E9", "#F0E442", "#000000",
                                              "#999999"};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

void open_svg(std::ostringstream& o, const ChartSpec& spec) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\"";
  if (!spec.id.empty()) o << " id=\"" << xml_escape(spec.id) << "\"";
  o << " width=\"" << spec.width << "\" height=\"" << spec.height << "\" viewBox=\"0 0 "
    << spec.width << ' ' << spec.height << "\" role=\"img\" aria-label=\"" << xml_escape(spec.title)
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << spec.width << "\" height=\"" << spec.height
    << "\" fill=\"#ffffff\"/>\n";
  o << "<text x=\"" << spec.width / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" "
       "font-weight=\"bold\">" << xml_escape(spec.title) << "</text>\n";
}

void axes(std::ostringstream& o, const ChartSpec& spec, const Frame& f,
          const std::vector<double>& yticks, const Scale& ys) {
  for (double t : yticks) {
    const double y = ys(t);
    o << "<line x1=\"" << f.left << "\" y1=\"" << y << "\" x2=\"" << f.right << "\" y2=\"" << y
      << "\" stroke=\"#e0e0e0\"/>\n";
    o << "<text x=\"" << f.left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << fmt(t)
      << "</text>\n";
  }
  o << "<line x1=\"" << f.left << "\" y1=\"" << f.bottom << "\" x2=\"" << f.right << "\" y2=\""
    << f.bottom << "\" stroke=\"#333\"/>\n";
  o << "<line x1=\"" << f.left << "\" y1=\"" << f.top << "\" x2=\"" << f.left << "\" y2=\""
    << f.bottom << "\" stroke=\"#333\"/>\n";
  o << "<text x=\"" << (f.left + f.right) / 2 << "\" y=\"" << f.bottom + 40
    << "\" text-anchor=\"middle\">" << xml_escape(spec.x_label) << "</text>\n";
  const double cy = (f.top + f.bottom) / 2;
  o << "<text x=\"18\" y=\"" << cy << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << cy
    << ")\">" << xml_escape(spec.y_label) << "</text>\n";
}

void legend(std::ostringstream& o, const ChartSpec& spec, const std::vector<std::string>& names,
            const std::vector<bool>& dashed) {
  double x = 78;
  double y = spec.height - 22.0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double w = 34.0 + 7.0 * static_cast<double>(names[i].size());
    if (x + w > spec.width - 10.0 && x > 78) {
      x = 78;
      y += 16;
    }
    o << "<g class=\"legend-item\"><line x1=\"" << x << "\" y1=\"" << y - 4 << "\" x2=\"" << x + 20
      << "\" y2=\"" << y - 4 << "\" stroke=\"" << colour(i) << "\" stroke-width=\"6\""
      << (i < dashed.size() && dashed[i] ? " stroke-dasharray=\"4 3\"" : "") << "/>";
    o << "<text x=\"" << x + 26 << "\" y=\"" << y << "\">" << xml_escape(names[i]) << "</text></g>\n";
    x += w;
  }
}

}  // namespace svg
}  // namespace megasim
