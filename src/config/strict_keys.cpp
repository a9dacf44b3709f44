#include "megasim/config/strict_keys.hpp"

#include <algorithm>
#include <vector>

#include "config/json_reader.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

void require_known_keys(const nlohmann::json& object, const std::string& path,
                        std::initializer_list<std::string_view> allowed) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::vector<std::string> valid(allowed.begin(), allowed.end());
    throw InputError(join_path(path, key), config_detail::unknown_key_rule(key, valid));
  }
}

}  // namespace megasim
