#include "megasim/report/human_number.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace megasim {

std::string human_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[48];
  const double a = std::fabs(v);
  if (a < 9999.5) {  // "%.4g" would round 9999.5 up to "1e+04"
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
  }
  static constexpr std::array<std::pair<double, const char*>, 4> kSuffixes{
      {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, suffix] : kSuffixes) {
    // By the rounded value: 999,999 is "1.00 M", not "1000 k".
    if (a < scale * 0.9995) continue;
    const double x = v / scale;
    // Three significant digits, trailing zeros kept: 1.10, 19.8, 198 (beyond 999 T: 1234 T).
    const double ax = std::fabs(x);
    const int decimals = ax < 9.995 ? 2 : ax < 99.95 ? 1 : 0;
    std::snprintf(buf, sizeof buf, "%.*f %s", decimals, x, suffix);
    return buf;
  }
  return "n/a";  // unreachable: a >= 1e4 meets the "k" row
}

std::string human_cell(const std::string& cell) {
  if (cell.empty()) return cell;
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str() || *end != '\0') return cell;  // not (only) a number
  const bool scientific = cell.find_first_of("eE") != std::string::npos;
  const bool fraction = cell.find('.') != std::string::npos;
  if (scientific || (fraction && std::fabs(v) >= 1e4)) return human_number(v);
  return cell;
}

}  // namespace megasim
