#pragma once
// Private: the capacity report as neutral tables and rendered charts, shared by the HTML,
// Markdown and CSV writers so the three always agree.
#include <string>
#include <utility>
#include <vector>

#include "megasim/capreport/capacity_report.hpp"

namespace megasim::capreport {

struct ReportTable {
  std::string file;   // CSV file name, e.g. "scaling.csv"
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct ReportChart {
  std::string id;
  std::string title;
  std::string svg;
  std::string csv_file;
  std::string caption;
};

struct ReportData {
  std::vector<std::pair<std::string, std::string>> summary;  // label, value
  std::vector<ReportChart> charts;
  std::vector<ReportTable> tables;   // one CSV each; chart tables first
  std::vector<std::string> skipped;  // "N GPUs: reason"
};

ReportData make_report_data(const CapacityReport& r);
std::string to_csv(const ReportTable& t);
std::string render_html(const CapacityReport& r, const ReportData& d);
std::string render_markdown(const CapacityReport& r, const ReportData& d);

// "%.4g"-style formatting for tables; CSVs use full precision ("%.6g").
std::string num(double v, int digits = 4);
// Token counts for titles: 3e11 -> "300B", 1.5e13 -> "15T".
std::string tokens_text(double tokens);

}  // namespace megasim::capreport
