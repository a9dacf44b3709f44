#pragma once
// configs/hw/<profile>.json -> HardwareProfile. Every numeric field is {"value": x, "source": "..."}
// (a figure without provenance is an error); unknown keys are errors naming their JSON path.
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "megasim/hw/hardware_profile.hpp"

namespace megasim {

class Catalog;

// Parses a profile object; `json_path` names it in errors (InputError on any missing/invalid
// field).
HardwareProfile load_hardware_profile(const nlohmann::json& j, const std::string& json_path);

// The catalog entry hw/<profile>; `json_path` is the config field that named it.
HardwareProfile load_hardware_profile(const Catalog& catalog, std::string_view profile, const std::string& json_path);

}  // namespace megasim
