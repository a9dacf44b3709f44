#pragma once
// Numbers for people: large counts, rates and costs in text, Markdown and HTML reports read
// "1.98 M" instead of "1.981e+06". Machine outputs (JSON, CSV) keep their full numbers.
#include <string>

namespace megasim {

// Three significant digits with a thousands suffix from 10,000 up: 12,345 -> "12.3 k",
// 1.101e6 -> "1.10 M", 2.5e9 -> "2.50 B", 3e12 -> "3.00 T"; smaller magnitudes print with up to
// four significant digits ("6.351", "1024"); non-finite values print as "n/a".
std::string human_number(double v);

// A table cell written for a CSV file, shown to a person: a number in scientific notation or a
// fraction of 10,000 or more goes through human_number; whole numbers (GPU counts), text and
// empty cells are kept as they are.
std::string human_cell(const std::string& csv_cell);

}  // namespace megasim
