#include <fstream>

#include "capreport/report_data.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  if (!out) throw InputError("--out", "cannot write " + p.string());
  out << text;
  if (!out) throw InputError("--out", "failed writing " + p.string());
}

}  // namespace

std::vector<std::filesystem::path> write_capacity_report(const CapacityReport& report,
                                                         const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--out", "cannot create directory " + dir.string() + ": " + ec.message());
  const auto data = capreport::make_report_data(report);
  std::vector<std::filesystem::path> written;
  const auto emit = [&](const std::string& name, const std::string& text) {
    write_file(dir / name, text);
    written.push_back(dir / name);
  };
  emit("report.html", capreport::render_html(report, data));
  emit("report.md", capreport::render_markdown(report, data));
  for (const auto& t : data.tables) emit(t.file, capreport::to_csv(t));
  return written;
}

}  // namespace megasim
