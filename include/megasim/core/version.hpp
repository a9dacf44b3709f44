#pragma once
namespace megasim {
inline constexpr const char* kVersion = "0.1.0";
// Bumped whenever a report field is renamed or removed (additions keep the version).
inline constexpr int kSchemaVersion = 1;
}  // namespace megasim
