#pragma once
// configs/reliability/default.json (+ an optional JSON merge patch) -> ReliabilityCatalog.
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "megasim/goodput/reliability.hpp"

namespace megasim {

// Parses the catalog JSON (strict: unknown keys and bad units are InputErrors naming `path`).
// Each figure is either {"value": V, "source": "..."} or a bare V (an override).
ReliabilityCatalog reliability_from_json(const nlohmann::json& j, const std::string& path);

// Reads <dir>/default.json, then applies `overrides` as a JSON merge patch (may be null).
ReliabilityCatalog load_reliability_catalog(const std::filesystem::path& dir,
                                            const nlohmann::json* overrides = nullptr);

// The same with the merge patch read from `patch_file` (`report --reliability FILE`); a file
// that cannot be read or parsed is an InputError naming `option`.
ReliabilityCatalog load_reliability_catalog(const std::filesystem::path& dir, const std::filesystem::path& patch_file,
                                            const std::string& option);

}  // namespace megasim
