#pragma once
// Strict typed reading of one JSON object with JSON-path errors (private to the config module).
// Every key the parser asks for becomes "known"; finish() then rejects any other key and
// suggests the closest known one, so a typo never becomes a silent default.
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "megasim/core/error.hpp"

namespace megasim::config_detail {

inline constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();

std::size_t edit_distance(std::string_view a, std::string_view b);
// `unknown key "hiden_size"; did you mean "hidden_size"?` (or the list of valid keys).
std::string unknown_key_rule(std::string_view key, const std::vector<std::string>& valid);
// Short description of a JSON value for "expected X, got Y" messages.
std::string describe(const nlohmann::json& v);
std::string join(const std::vector<std::string>& items, std::string_view sep);

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

class ObjectReader {
 public:
  // Throws InputError(path, "expected an object, got ...") unless `obj` is an object.
  ObjectReader(const nlohmann::json& obj, std::string path);

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const { return join_path(path_, std::string(key)); }
  bool has(std::string_view key) const;

  // The raw value (nullptr when absent) and the key becomes known. Figures written as
  // {"value": V, "source": "...", "status": "..."} are unwrapped to V.
  const nlohmann::json* raw(std::string_view key);

  // Integers; JSON null counts as absent. Integral floats (1.2288e4) are accepted.
  std::optional<std::int64_t> int_opt(std::string_view key, std::int64_t min, std::int64_t max);
  std::int64_t int_req(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<double> number_opt(std::string_view key, double min, double max);
  std::optional<bool> bool_opt(std::string_view key);
  std::optional<std::string> string_opt(std::string_view key);
  std::string string_req(std::string_view key);
  // Unit strings (megasim/core/units.hpp); a bare number is an error.
  std::optional<double> bytes_opt(std::string_view key);
  std::optional<double> bandwidth_opt(std::string_view key);
  std::optional<double> time_opt(std::string_view key);
  std::optional<double> flops_opt(std::string_view key);
  // Fails with InputError(path.key, "required field is missing") unless present and non-null.
  const nlohmann::json& require(std::string_view key);

  template <typename E, std::size_t N>
  std::optional<E> enum_opt(std::string_view key, const std::array<EnumName<E>, N>& table) {
    const auto s = string_opt(key);
    if (!s) return std::nullopt;
    std::vector<std::string> valid;
    for (const auto& e : table) {
      if (e.name == *s) return e.value;
      valid.emplace_back(e.name);
    }
    throw InputError(path_of(key), "unknown value \"" + *s + "\"; valid: " + join(valid, ", "));
  }

  // Marks a key as known without reading it.
  void allow(std::string_view key) { known_.emplace(key); }
  // Throws on the first (alphabetically) key never asked for.
  void finish() const;
  // Keys never asked for (Hugging Face configs: logged, not rejected).
  std::vector<std::string> unused_keys() const;

 private:
  std::optional<std::string> unit_string(std::string_view key);
  const nlohmann::json& obj_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
};

}  // namespace megasim::config_detail
