// report.html: one self-contained page (inline CSS, inline SVG, a tiny inline self-check
// script, no external resources), readable at a glance: summary first, then one chart per
// question, then the tables.
#include <sstream>

#include "capreport/report_data.hpp"
#include "megasim/capreport/svg_chart.hpp"
#include "megasim/core/version.hpp"
#include "megasim/report/human_number.hpp"

namespace megasim::capreport {

namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 32px; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
.summary td:first-child { text-align: left; font-weight: bold; }
figure { margin: 16px 0; } figcaption { color: #555; font-size: 13px; }
.skipped { color: #a33; }
.scroll { overflow-x: auto; }
)";

// Runs in the browser after load: every chart must have a non-empty box and drawn marks. The
// verdict goes into document.title so a headless browser can report it (--dump-dom).
constexpr const char* kSelfCheck = R"(
(function () {
  var svgs = document.querySelectorAll('svg.chart');
  var bad = [];
  for (var i = 0; i < svgs.length; i++) {
    var s = svgs[i], b = s.getBoundingClientRect();
    var marks = s.querySelectorAll('path.series, rect.bar, circle').length;
    if (!(b.width > 0 && b.height > 0) || marks === 0) bad.push(s.id || ('#' + i));
  }
  document.title = (bad.length === 0 ? 'megasim-report-ok' : 'megasim-report-FAIL ' + bad.join(' ')) +
                   ' charts=' + svgs.length;
})();
)";

void table_html(std::ostringstream& o, const ReportTable& t) {
  o << "<div class=\"scroll\"><table><tr>";
  for (std::size_t i = 0; i < t.header.size(); ++i) {
    o << "<th" << (i == 0 ? " class=\"l\"" : "") << ">" << xml_escape(t.header[i]) << "</th>";
  }
  o << "</tr>\n";
  for (const auto& row : t.rows) {
    o << "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      o << "<td" << (i == 0 ? " class=\"l\"" : "") << ">" << xml_escape(human_cell(row[i])) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table></div>\n<p class=\"sub\">Data: <a href=\"" << xml_escape(t.file) << "\">" << xml_escape(t.file)
    << "</a></p>\n";
}

const ReportTable* find_table(const ReportData& d, const std::string& file) {
  for (const auto& t : d.tables) {
    if (t.file == file) return &t;
  }
  return nullptr;
}

}  // namespace

std::string render_html(const CapacityReport& r, const ReportData& d) {
  std::ostringstream o;
  const std::string name = r.job_name.empty() ? "job" : r.job_name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<title>megasim capacity report: " << xml_escape(name) << "</title>\n<style>" << kStyle
    << "</style>\n</head>\n<body>\n";
  o << "<h1>Capacity plan: " << xml_escape(name) << "</h1>\n";
  o << "<p class=\"sub\">megasim " << kVersion << " &middot; " << tokens_text(r.train_tokens)
    << " tokens &middot; " << r.points.size() << " GPU counts swept &middot; model "
    << xml_escape(r.base.model.name) << " on " << xml_escape(r.base.cluster.gpu.name) << " &middot; seed "
    << r.seed << "</p>\n";
  if (!d.summary.empty()) {
    o << "<h2>At a glance</h2>\n<table class=\"summary\">\n";
    for (const auto& [k, v] : d.summary) o << "<tr><td>" << xml_escape(k) << "</td><td>" << xml_escape(v) << "</td></tr>\n";
    o << "</table>\n";
  }
  if (!d.skipped.empty()) {
    o << "<h2>Skipped GPU counts</h2>\n<ul class=\"skipped\">\n";
    for (const auto& s : d.skipped) o << "<li>" << xml_escape(s) << "</li>\n";
    o << "</ul>\n";
  }
  o << "<h2>Charts</h2>\n";
  for (const auto& c : d.charts) {
    o << "<figure>\n" << c.svg << "<figcaption>" << xml_escape(c.caption) << " Data: <a href=\""
      << xml_escape(c.csv_file) << "\">" << xml_escape(c.csv_file) << "</a></figcaption>\n</figure>\n";
  }
  if (const auto* t = find_table(d, "interruptions_by_cause.csv"); t != nullptr && !t->rows.empty()) {
    o << "<h2>" << xml_escape(t->title) << " (focus point)</h2>\n";
    table_html(o, *t);
  }
  if (const auto* t = find_table(d, "plan.csv")) {
    o << "<h2>" << xml_escape(t->title) << "</h2>\n";
    table_html(o, *t);
  }
  o << "<h2>Assumptions and sources</h2>\n<ul>\n";
  for (const auto& a : r.assumptions) o << "<li>" << xml_escape(a) << "</li>\n";
  o << "</ul>\n<script>" << kSelfCheck << "</script>\n</body>\n</html>\n";
  return o.str();
}

std::string render_markdown(const CapacityReport& r, const ReportData& d) {
  std::ostringstream o;
  const std::string name = r.job_name.empty() ? "job" : r.job_name;
  o << "# Capacity plan: " << name << "\n\n";
  o << "megasim " << kVersion << " · " << tokens_text(r.train_tokens) << " tokens · " << r.points.size()
    << " GPU counts swept · model " << r.base.model.name << " on " << r.base.cluster.gpu.name << " · seed "
    << r.seed << "\n\n";
  if (!d.summary.empty()) {
    o << "## At a glance\n\n| | |\n|---|---|\n";
    for (const auto& [k, v] : d.summary) o << "| " << k << " | " << v << " |\n";
    o << "\n";
  }
  if (!d.skipped.empty()) {
    o << "## Skipped GPU counts\n\n";
    for (const auto& s : d.skipped) o << "- " << s << "\n";
    o << "\n";
  }
  for (const auto& t : d.tables) {
    if (t.rows.empty()) continue;
    o << "## " << t.title << "\n\n|";
    for (const auto& h : t.header) o << ' ' << h << " |";
    o << "\n|";
    for (std::size_t i = 0; i < t.header.size(); ++i) o << (i == 0 ? "---|" : "---:|");
    o << "\n";
    for (const auto& row : t.rows) {
      o << "|";
      for (const auto& c : row) o << ' ' << human_cell(c) << " |";
      o << "\n";
    }
    o << "\nData: [" << t.file << "](" << t.file << ")\n\n";
  }
  o << "## Assumptions and sources\n\n";
  for (const auto& a : r.assumptions) o << "- " << a << "\n";
  return o.str();
}

}  // namespace megasim::capreport
