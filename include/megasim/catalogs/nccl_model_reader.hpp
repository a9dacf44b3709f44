#pragma once
// configs/nccl/<version>.json -> NcclModel (strict: unknown keys and out-of-range figures are
// InputErrors naming their JSON path; latencies in µs and bandwidths in GB/s are converted).
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "megasim/coll/nccl_model.hpp"

namespace megasim {

class Catalog;

// Parses the catalog JSON; `path` prefixes error messages (InputError(json path, rule)).
NcclModel nccl_model_from_json(const nlohmann::json& j, const std::string& path = "");
NcclModel load_nccl_model(const std::filesystem::path& file);
// The bundled model: <catalog_dir>/nccl/nccl-2.21.json.
NcclModel load_default_nccl_model(const std::filesystem::path& configs_dir);
// The catalog entry nccl/<name>; `option` (e.g. "--nccl") is named when no such entry exists, and
// errors inside the file are prefixed "nccl".
NcclModel load_nccl_model(const Catalog& catalog, std::string_view name, const std::string& option);

}  // namespace megasim
