#include "megasim/core/units.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "megasim/core/error.hpp"

namespace megasim {

SimTime SimTime::from_seconds(double seconds) {
  if (!(seconds > 0.0)) return SimTime(0);
  const double ps = std::round(seconds * 1e12);
  if (!std::isfinite(ps) || ps >= 9.2e18) return SimTime::max();
  return SimTime(static_cast<std::int64_t>(ps));
}

bool nearly_equal(double a, double b, double rel_eps) {
  const double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= rel_eps * scale;
}

namespace {

struct UnitEntry {
  std::string_view suffix;
  double multiplier;
};

// Splits "12.5GB/s" into 12.5 and "GB/s". Leading/trailing spaces and one space between
// number and unit are accepted. Returns false when there is no number or no unit.
bool split_number_unit(std::string_view text, double& number, std::string_view& unit) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::size_t i = 0;
  while (i < text.size() &&
         ((text[i] >= '0' && text[i] <= '9') || text[i] == '.' || text[i] == 'e' ||
          text[i] == 'E' || text[i] == '+' || text[i] == '-')) {
    // Do not swallow the 'E' of a unit such as "EFLOPS" when no digit follows.
    if ((text[i] == 'e' || text[i] == 'E') &&
        (i + 1 >= text.size() || !((text[i + 1] >= '0' && text[i + 1] <= '9') ||
                                   text[i + 1] == '+' || text[i + 1] == '-'))) {
      break;
    }
    ++i;
  }
  if (i == 0) return false;
  const std::string num(text.substr(0, i));
  char* end = nullptr;
  number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(number)) return false;
  unit = text.substr(i);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return !unit.empty();
}

template <std::size_t N>
double parse_with_table(std::string_view text, const std::string& path,
                        const std::array<UnitEntry, N>& table, const char* what) {
  double number = 0.0;
  std::string_view unit;
  std::string valid;
  for (const auto& e : table) {
    if (!valid.empty()) valid += ", ";
    valid += e.suffix;
  }
  if (!split_number_unit(text, number, unit)) {
    throw InputError(path, "malformed " + std::string(what) + " \"" + std::string(text) +
                               "\": expected a number followed by a unit (" + valid + ")");
  }
  for (const auto& e : table) {
    if (unit == e.suffix) {
      if (number < 0.0) {
        throw InputError(path, std::string(what) + " \"" + std::string(text) + "\" must not be negative");
      }
      return number * e.multiplier;
    }
  }
  throw InputError(path, "unknown unit \"" + std::string(unit) + "\" in " + std::string(what) +
                             " \"" + std::string(text) + "\": expected one of " + valid);
}

}  // namespace

double parse_bytes(std::string_view text, const std::string& path) {
  static constexpr std::array<UnitEntry, 9> kTable{{{"B", 1.0},
                                                    {"KB", 1e3},
                                                    {"MB", 1e6},
                                                    {"GB", 1e9},
                                                    {"TB", 1e12},
                                                    {"KiB", 1024.0},
                                                    {"MiB", 1048576.0},
                                                    {"GiB", 1073741824.0},
                                                    {"TiB", 1099511627776.0}}};
  return parse_with_table(text, path, kTable, "byte size");
}

double parse_bandwidth_Bps(std::string_view text, const std::string& path) {
  static constexpr std::array<UnitEntry, 13> kTable{{{"bps", 1.0 / 8},
                                                     {"Kbps", 1e3 / 8},
                                                     {"Mbps", 1e6 / 8},
                                                     {"Gbps", 1e9 / 8},
                                                     {"Tbps", 1e12 / 8},
                                                     {"B/s", 1.0},
                                                     {"KB/s", 1e3},
                                                     {"MB/s", 1e6},
                                                     {"GB/s", 1e9},
                                                     {"TB/s", 1e12},
                                                     {"KiB/s", 1024.0},
                                                     {"MiB/s", 1048576.0},
                                                     {"GiB/s", 1073741824.0}}};
  return parse_with_table(text, path, kTable, "bandwidth");
}

double parse_time_s(std::string_view text, const std::string& path) {
  static constexpr std::array<UnitEntry, 8> kTable{{{"ps", 1e-12},
                                                    {"ns", 1e-9},
                                                    {"us", 1e-6},
                                                    {"ms", 1e-3},
                                                    {"s", 1.0},
                                                    {"min", 60.0},
                                                    {"h", 3600.0},
                                                    {"d", 86400.0}}};
  return parse_with_table(text, path, kTable, "duration");
}

double parse_flops_rate(std::string_view text, const std::string& path) {
  static constexpr std::array<UnitEntry, 14> kTable{{{"FLOPS", 1.0},
                                                     {"KFLOPS", 1e3},
                                                     {"MFLOPS", 1e6},
                                                     {"GFLOPS", 1e9},
                                                     {"TFLOPS", 1e12},
                                                     {"PFLOPS", 1e15},
                                                     {"EFLOPS", 1e18},
                                                     {"FLOP/s", 1.0},
                                                     {"KFLOP/s", 1e3},
                                                     {"MFLOP/s", 1e6},
                                                     {"GFLOP/s", 1e9},
                                                     {"TFLOP/s", 1e12},
                                                     {"PFLOP/s", 1e15},
                                                     {"EFLOP/s", 1e18}}};
  return parse_with_table(text, path, kTable, "compute rate");
}

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u + 1 < kUnits.size()) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string format_time(double seconds) {
  char buf[64];
  const double a = std::fabs(seconds);
  if (a >= 86400.0) {
    std::snprintf(buf, sizeof buf, "%.2f d", seconds / 86400.0);
  } else if (a >= 1.0 || a == 0.0) {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  } else if (a >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  } else if (a >= 1e-6) {
    std::snprintf(buf, sizeof buf, "%.2f us", seconds * 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f ns", seconds * 1e9);
  }
  return buf;
}

std::string format_rate_GBps(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bytes_per_s / 1e9);
  return buf;
}

}  // namespace megasim
