// libFuzzer entry point (clang only, not part of ctest):
//   cmake -DCMAKE_CXX_COMPILER=clang++ ... && ninja megasim_config_fuzz
//   ./megasim_config_fuzz -max_total_time=60 corpus/
// The input bytes are a config's JSON text; anything but InputError is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const megasim::Catalog catalog = megasim::Catalog::open(MEGASIM_SOURCE_DIR "/configs");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json j = megasim::parse_json_text(text, "", "fuzz input");
    (void)megasim::parse_job(j, catalog, MEGASIM_SOURCE_DIR "/tests/data");
  } catch (const megasim::InputError&) {
  }
  return 0;
}
