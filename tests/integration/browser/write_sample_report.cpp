// Writes a sample capacity report (fake step results) into argv[1]; used by the headless
// browser test (scripts/chromium-check.sh). With a third argument "--break" the bars of every
// bar chart are renamed so they no longer count as drawn marks: the browser check must fail.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "capreport/fake_simulate.hpp"
#include "megasim/catalogs/reliability_reader.hpp"
#include "megasim/capreport/capacity_report.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: write_sample_report OUT_DIR RELIABILITY_DIR [--break]\n";
    return 2;
  }
  using namespace megasim;
  CapacityOptions o;
  o.gpus_min = 128;
  o.gpus_max = 4096;
  o.mc_trials = 300;
  const auto rep = build_capacity_report(testing::fake_job(), testing::fake_simulate,
                                         load_reliability_catalog(argv[2]), o);
  write_capacity_report(rep, argv[1]);
  if (argc == 4 && std::string(argv[3]) == "--break") {
    const auto html = std::filesystem::path(argv[1]) / "report.html";
    std::stringstream buf;
    buf << std::ifstream(html).rdbuf();
    std::string text = buf.str();
    for (auto p = text.find("class=\"bar\""); p != std::string::npos; p = text.find("class=\"bar\"", p)) {
      text.replace(p, 11, "class=\"xbr\"");
    }
    std::ofstream(html) << text;
  }
  std::cout << (std::filesystem::path(argv[1]) / "report.html").string() << "\n";
  return 0;
}
