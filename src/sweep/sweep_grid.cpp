#include "megasim/sweep/sweep_grid.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <algorithm>

#include "megasim/core/error.hpp"

namespace megasim {

namespace {

constexpr std::size_t kMaxValues = 100000;
constexpr std::size_t kMaxPoints = 1000000;

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw InputError("--vary", "\"" + text + "\": " + why);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

bool parse_int(const std::string& s, std::int64_t& v) {
  const auto* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, v);
  return r.ec == std::errc() && r.ptr == end && !s.empty();
}

bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  std::size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(v);
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

std::vector<std::string> expand_range(const std::string& text, const std::string& range) {
  const auto parts = split(range, ':');
  if (parts.size() != 3 || parts[2].size() < 2 || (parts[2][0] != 'x' && parts[2][0] != '+')) {
    bad(text, "a range is A:B:xF (geometric) or A:B:+S (arithmetic)");
  }
  const bool geometric = parts[2][0] == 'x';
  const std::string step = parts[2].substr(1);
  std::vector<std::string> out;
  std::int64_t ia = 0, ib = 0, is = 0;
  if (parse_int(parts[0], ia) && parse_int(parts[1], ib) && parse_int(step, is)) {
    if (ia > ib) bad(text, "range start " + parts[0] + " is above its end " + parts[1]);
    if (geometric && ia <= 0) bad(text, "a geometric range needs a start > 0");
    if (geometric && is <= 1) bad(text, "a geometric factor must be > 1");
    if (!geometric && is <= 0) bad(text, "an arithmetic step must be > 0");
    for (std::int64_t v = ia; v <= ib; v = geometric ? v * is : v + is) {
      out.push_back(std::to_string(v));
      if (out.size() > kMaxValues) bad(text, "more than 100000 values");
      if (geometric ? v > ib / is : v > ib - is) break;  // next value would pass B (or overflow)
    }
    return out;
  }
  double a = 0, b = 0, s = 0;
  if (!parse_double(parts[0], a) || !parse_double(parts[1], b) || !parse_double(step, s)) {
    bad(text, "range bounds and step must be numbers");
  }
  if (a > b) bad(text, "range start " + parts[0] + " is above its end " + parts[1]);
  if (geometric && a <= 0) bad(text, "a geometric range needs a start > 0");
  if (geometric && s <= 1) bad(text, "a geometric factor must be > 1");
  if (!geometric && s <= 0) bad(text, "an arithmetic step must be > 0");
  // Tolerance so that 0.1:0.3:+0.1 includes 0.3 despite rounding; values are computed from
  // the index, not accumulated, so they do not drift.
  const double tol = 1e-9 * std::max(std::abs(a), std::abs(b));
  for (std::size_t i = 0;; ++i) {
    const double v = geometric ? a * std::pow(s, static_cast<double>(i)) : a + s * static_cast<double>(i);
    if (v > b + tol) break;
    out.push_back(fmt_double(v));
    if (out.size() > kMaxValues) bad(text, "more than 100000 values");
  }
  return out;
}

}  // namespace

VarySpec parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) bad(text, "expected PATH=V1,V2,... or PATH=A:B:xF or PATH=A:B:+S");
  VarySpec v;
  v.path = text.substr(0, eq);
  const std::string rhs = text.substr(eq + 1);
  if (v.path.empty()) bad(text, "empty config path before '='");
  for (const auto& key : split(v.path, '.')) {
    if (key.empty()) bad(text, "empty key in path \"" + v.path + "\"");
  }
  if (rhs.empty()) bad(text, "no values after '='");
  // A range has exactly two ':' and a step starting with x or +; anything else is a list
  // (so "system.attention_kernel=flash-v2" or a JSON object value stays a single value).
  const auto colons = std::count(rhs.begin(), rhs.end(), ':');
  const bool looks_range = colons == 2 && rhs.find(',') == std::string::npos && rhs.front() != '{' &&
                           rhs.front() != '"';
  if (looks_range) {
    v.values = expand_range(text, rhs);
  } else {
    v.values = split(rhs, ',');
    for (const auto& val : v.values) {
      if (val.empty()) bad(text, "empty value in the list");
    }
    if (v.values.size() > kMaxValues) bad(text, "more than 100000 values");
  }
  return v;
}

std::size_t grid_size(const std::vector<VarySpec>& vary) {
  std::set<std::string> paths;
  std::size_t n = 1;
  for (const auto& v : vary) {
    if (!paths.insert(v.path).second) {
      throw InputError("--vary", "\"" + v.path + "\" is varied twice; give all its values in one --vary");
    }
    if (v.values.empty()) throw InputError("--vary", "\"" + v.path + "\" has no values");
    if (n > kMaxPoints / v.values.size()) {
      throw InputError("--vary", "the grid has more than 1000000 points; split it into several sweeps");
    }
    n *= v.values.size();
  }
  return n;
}

std::vector<std::string> grid_assignments(const std::vector<VarySpec>& vary, std::size_t index) {
  std::vector<std::string> out(vary.size());
  for (std::size_t k = vary.size(); k-- > 0;) {
    const auto& vals = vary[k].values;
    out[k] = vary[k].path + "=" + vals[index % vals.size()];
    index /= vals.size();
  }
  return out;
}

ShardSpec parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  std::int64_t i = 0, n = 0;
  if (slash == std::string::npos || !parse_int(text.substr(0, slash), i) || !parse_int(text.substr(slash + 1), n)) {
    throw InputError("--shard", "expected I/N (0-based shard I of N), got \"" + text + "\"");
  }
  if (n < 1 || i < 0 || i >= n) {
    throw InputError("--shard", "\"" + text + "\": need 0 <= I < N (shards are numbered from 0)");
  }
  return {static_cast<std::size_t>(i), static_cast<std::size_t>(n)};
}

std::vector<std::size_t> shard_points(std::size_t total, const ShardSpec& shard) {
  std::vector<std::size_t> out;
  for (std::size_t p = shard.index; p < total; p += shard.count) out.push_back(p);
  return out;
}

}  // namespace megasim
