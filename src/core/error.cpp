#include "megasim/core/error.hpp"

#include <utility>

namespace megasim {

InputError::InputError(std::string path, std::string rule)
    : std::runtime_error(path.empty() ? rule : path + ": " + rule),
      path_(std::move(path)),
      rule_(std::move(rule)) {}

std::string join_path(const std::string& parent, const std::string& key) {
  if (parent.empty()) return key;
  return parent + "." + key;
}

}  // namespace megasim
