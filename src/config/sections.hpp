#pragma once
// Resolving a config section that may be written as a string (private to the config module).
// A2: any section may be a catalog name ("gpt3-175b") or a path to a JSON file; a string that
// contains '/' or ends in ".json" is a path (relative to the file that names it), anything else
// a catalog name. An object section may also name a "base" (catalog name or file) whose
// contents it extends: {"base": "megascale-a100-clos", "num_gpus": 3072}.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"

namespace megasim::config_detail {

struct Resolved {
  nlohmann::json value;        // always an object for catalog entries; files may hold anything
  std::string name;            // catalog name or file stem; empty for inline objects
};

bool looks_like_path(std::string_view s);

// `kind` is a catalog kind ("models", "clusters", "gpus", "systems") or empty for sections
// that can only name files ("parallel", "training"). A string `systems` section resolves to
// {"preset": name}. Relative paths inside resolved files ("gpu" of a cluster file, "base")
// are made absolute so that the value can be moved into another config safely.
Resolved resolve_section(const nlohmann::json& v, std::string_view kind, const std::string& path,
                         const Catalog& catalog, const std::filesystem::path& base_dir);

// Objects merge key by key (recursively); any other value in `overlay` replaces the base.
void deep_merge(nlohmann::json& base, const nlohmann::json& overlay);

}  // namespace megasim::config_detail
