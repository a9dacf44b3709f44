#pragma once
// The rule every catalog reader applies to an object it reads: a key it does not understand is
// an error naming the key's JSON path and the closest valid key, never a figure silently left at
// its default (a typo in configs/hw/hopper.json must not become 0).
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace megasim {

// Throws InputError(path.key, "unknown key \"k\"; did you mean \"...\"?") for the first key of
// `object` (a JSON object) not in `allowed`.
void require_known_keys(const nlohmann::json& object, const std::string& path,
                        std::initializer_list<std::string_view> allowed);

}  // namespace megasim
