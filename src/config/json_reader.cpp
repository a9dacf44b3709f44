#include "config/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "megasim/core/units.hpp"

namespace megasim::config_detail {

namespace {

// Documentation keys allowed in every object: catalogs explain their figures in place.
constexpr std::array<std::string_view, 4> kDocKeys{"source", "notes", "status", "description"};

bool is_doc_key(std::string_view k) {
  return std::find(kDocKeys.begin(), kDocKeys.end(), k) != kDocKeys.end();
}

// {"value": V, "source": ...} -> V. Anything else is returned unchanged.
const nlohmann::json& unwrap(const nlohmann::json& v, const std::string& path) {
  if (!v.is_object() || !v.contains("value")) return v;
  for (const auto& [k, _] : v.items()) {
    if (k != "value" && !is_doc_key(k)) {
      throw InputError(path, "a figure written as an object may only hold \"value\", \"source\", "
                             "\"status\", \"notes\" and \"description\"; got key \"" + k + "\"");
    }
  }
  return v.at("value");
}

// The shortest of %.15g / %.16g / %.17g that reads back as d: "0.1", not "0.10000000000000001".
std::string format_number(double d) {
  char buf[64];
  for (const int digits : {15, 16}) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, d);
    if (std::strtod(buf, nullptr) == d) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// A unit string can overflow to infinity ("1e300TB"); downstream arithmetic needs finite values.
double finite_or_throw(double v, const std::string& text, const std::string& path) {
  if (!std::isfinite(v)) throw InputError(path, "\"" + text + "\" is too large");
  return v;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

namespace {

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0; start <= s.size();) {
    const auto end = std::min(s.find('_', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::size_t shared_words(std::string_view a, std::string_view b) {
  const auto wb = words(b);
  std::size_t n = 0;
  for (const auto w : words(a)) n += static_cast<std::size_t>(std::count(wb.begin(), wb.end(), w));
  return n;
}

}  // namespace

std::string unknown_key_rule(std::string_view key, const std::vector<std::string>& valid) {
  // Rank by whole words in common first ("tensor_parallel_size" -> "tensor_model_parallel_size",
  // not the letter-wise closer "context_parallel_size"), then by edit distance.
  std::string best;
  std::size_t best_shared = 0;
  std::size_t best_d = std::string::npos;
  for (const auto& v : valid) {
    const std::size_t shared = shared_words(key, v);
    const std::size_t d = edit_distance(key, v);
    if (shared > best_shared || (shared == best_shared && d < best_d)) {
      best_shared = shared;
      best_d = d;
      best = v;
    }
  }
  // Only suggest when the typo is plausibly the same word (a third of its letters at most).
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
  std::string rule = "unknown key \"" + std::string(key) + "\"";
  if (best_d <= limit || best_shared >= 2) return rule + "; did you mean \"" + best + "\"?";
  return rule + "; valid keys: " + join(valid, ", ");
}

std::string describe(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "string \"" + s + "\"";
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number " + v.dump();
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string path)
    : obj_(obj), path_(std::move(path)) {
  if (!obj_.is_object()) {
    throw InputError(path_.empty() ? std::string("config") : path_,
                     "expected an object, got " + describe(obj_));
  }
}

bool ObjectReader::has(std::string_view key) const {
  const auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json* ObjectReader::raw(std::string_view key) {
  known_.emplace(key);
  const auto it = obj_.find(key);
  if (it == obj_.end()) return nullptr;
  return &unwrap(*it, path_of(key));
}

const nlohmann::json& ObjectReader::require(std::string_view key) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) throw InputError(path_of(key), "required field is missing");
  return *v;
}

std::optional<std::int64_t> ObjectReader::int_opt(std::string_view key, std::int64_t min,
                                                  std::int64_t max) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::int64_t value = 0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) {
      throw InputError(path_of(key), "must be at most " + std::to_string(max) + ", got " + v->dump());
    }
    value = static_cast<std::int64_t>(u);
  } else if (v->is_number_integer()) {
    value = v->get<std::int64_t>();
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) {
      throw InputError(path_of(key), "expected an integer, got number " + format_number(d));
    }
    if (d > static_cast<double>(max) || d < static_cast<double>(min)) {
      throw InputError(path_of(key), "must be between " + std::to_string(min) + " and " +
                                         std::to_string(max) + ", got " + format_number(d));
    }
    value = static_cast<std::int64_t>(d);
  } else {
    throw InputError(path_of(key), "expected an integer, got " + describe(*v));
  }
  if (value < min) {
    const std::string what = min == 1 ? "must be positive" : "must be at least " + std::to_string(min);
    throw InputError(path_of(key), what + ", got " + std::to_string(value));
  }
  if (value > max) {
    throw InputError(path_of(key), "must be at most " + std::to_string(max) + ", got " + std::to_string(value));
  }
  return value;
}

std::int64_t ObjectReader::int_req(std::string_view key, std::int64_t min, std::int64_t max) {
  require(key);
  return *int_opt(key, min, max);
}

std::optional<double> ObjectReader::number_opt(std::string_view key, double min, double max) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_number()) throw InputError(path_of(key), "expected a number, got " + describe(*v));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    throw InputError(path_of(key), "must be between " + format_number(min) + " and " +
                                       format_number(max) + ", got " + format_number(d));
  }
  return d;
}

std::optional<bool> ObjectReader::bool_opt(std::string_view key) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_boolean()) throw InputError(path_of(key), "expected true or false, got " + describe(*v));
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string_opt(std::string_view key) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) throw InputError(path_of(key), "expected a string, got " + describe(*v));
  return v->get<std::string>();
}

std::string ObjectReader::string_req(std::string_view key) {
  require(key);
  auto s = string_opt(key);
  if (s->empty()) throw InputError(path_of(key), "must not be empty");
  return *s;
}

std::optional<std::string> ObjectReader::unit_string(std::string_view key) {
  const nlohmann::json* v = raw(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_number()) {
    throw InputError(path_of(key), "a bare number is not allowed here; write the unit, e.g. \"" +
                                       v->dump() + "<unit>\"");
  }
  if (!v->is_string()) {
    throw InputError(path_of(key), "expected a string with a unit, got " + describe(*v));
  }
  return v->get<std::string>();
}

std::optional<double> ObjectReader::bytes_opt(std::string_view key) {
  const auto s = unit_string(key);
  if (!s) return std::nullopt;
  return finite_or_throw(parse_bytes(*s, path_of(key)), *s, path_of(key));
}

std::optional<double> ObjectReader::bandwidth_opt(std::string_view key) {
  const auto s = unit_string(key);
  if (!s) return std::nullopt;
  return finite_or_throw(parse_bandwidth_Bps(*s, path_of(key)), *s, path_of(key));
}

std::optional<double> ObjectReader::time_opt(std::string_view key) {
  const auto s = unit_string(key);
  if (!s) return std::nullopt;
  return finite_or_throw(parse_time_s(*s, path_of(key)), *s, path_of(key));
}

std::optional<double> ObjectReader::flops_opt(std::string_view key) {
  const auto s = unit_string(key);
  if (!s) return std::nullopt;
  return finite_or_throw(parse_flops_rate(*s, path_of(key)), *s, path_of(key));
}

std::vector<std::string> ObjectReader::unused_keys() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : obj_.items()) {
    if (!known_.contains(k) && !is_doc_key(k)) out.push_back(k);
  }
  return out;
}

void ObjectReader::finish() const {
  const auto unused = unused_keys();
  if (unused.empty()) return;
  std::vector<std::string> valid(known_.begin(), known_.end());
  throw InputError(path_of(unused.front()), unknown_key_rule(unused.front(), valid));
}

}  // namespace megasim::config_detail
