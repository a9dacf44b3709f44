#include "megasim/core/version.hpp"
#include "megasim/sweep/sweep_table.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "megasim/core/error.hpp"

namespace megasim {

namespace {

using ojson = nlohmann::ordered_json;

// RFC 4180: quote a field holding a separator, a quote or a line break; double the quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

bool is_number_text(const std::string& s) {
  if (s.empty()) return false;
  const char c = s.front();
  if (!(c == '-' || (c >= '0' && c <= '9'))) return false;
  const auto v = ojson::parse(s, nullptr, false);
  return !v.is_discarded() && v.is_number();
}

ojson cell_to_json(const std::string& s) {
  if (s.empty()) return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  if (is_number_text(s)) return ojson::parse(s);
  return s;
}

std::string json_to_cell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::size_t parse_index(const std::string& s, const std::string& where, const std::string& what) {
  std::size_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) {
    throw InputError(where, what + " \"" + s + "\" is not a non-negative integer");
  }
  return v;
}

// One CSV record (possibly spanning lines inside quotes); false at end of input.
bool read_record(std::istream& in, std::vector<std::string>& fields, const std::string& where) {
  fields.clear();
  if (in.peek() == std::char_traits<char>::eof()) return false;
  std::string cur;
  bool quoted = false;
  for (;;) {
    const int ch = in.get();
    if (ch == std::char_traits<char>::eof()) {
      if (quoted) throw InputError(where, "unterminated quoted CSV field");
      break;
    }
    const char c = static_cast<char>(ch);
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          in.get();
          cur += '"';
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(cur);
      cur.clear();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      cur += c;
    }
  }
  fields.push_back(cur);
  return true;
}

void finish_rows(SweepTable& t, const std::string& where) {
  if (t.columns.size() < 2 || t.columns[0] != "point" || t.columns[1] != "points_total") {
    throw InputError(where, "not a megasim sweep table (its first columns must be point, points_total)");
  }
  for (auto& r : t.rows) {
    if (r.cells.size() != t.columns.size()) {
      throw InputError(where, "a row has " + std::to_string(r.cells.size()) + " cells for " +
                                  std::to_string(t.columns.size()) + " columns");
    }
    r.point = parse_index(r.cells[0], where, "point");
    const std::size_t total = parse_index(r.cells[1], where, "points_total");
    if (t.rows.front().cells[1] != r.cells[1]) throw InputError(where, "rows disagree on points_total");
    t.points_total = total;
  }
}

}  // namespace

void write_csv(const SweepTable& t, std::ostream& out) {
  for (std::size_t i = 0; i < t.columns.size(); ++i) out << (i ? "," : "") << csv_field(t.columns[i]);
  out << "\n";
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.cells.size(); ++i) out << (i ? "," : "") << csv_field(r.cells[i]);
    out << "\n";
  }
}

void write_json(const SweepTable& t, std::ostream& out) {
  ojson j;
  j["schema_version"] = kSchemaVersion;
  j["points_total"] = t.points_total;
  j["columns"] = t.columns;
  ojson rows = ojson::array();
  for (const auto& r : t.rows) {
    ojson row = ojson::object();
    for (std::size_t i = 0; i < t.columns.size(); ++i) row[t.columns[i]] = cell_to_json(r.cells[i]);
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  out << j.dump(2) << "\n";
}

SweepTable read_csv(std::istream& in, const std::string& where) {
  SweepTable t;
  std::vector<std::string> fields;
  if (!read_record(in, fields, where)) throw InputError(where, "empty file (no CSV header)");
  t.columns = fields;
  while (read_record(in, fields, where)) t.rows.push_back({0, fields});
  finish_rows(t, where);
  return t;
}

SweepTable read_json(std::istream& in, const std::string& where) {
  const ojson j = ojson::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("columns") || !j.contains("rows") ||
      !j["columns"].is_array() || !j["rows"].is_array()) {
    throw InputError(where, "not a megasim sweep JSON table (needs \"columns\" and \"rows\")");
  }
  SweepTable t;
  for (const auto& c : j["columns"]) {
    if (!c.is_string()) throw InputError(where, "column names must be strings");
    t.columns.push_back(c.get<std::string>());
  }
  for (const auto& row : j["rows"]) {
    if (!row.is_object()) throw InputError(where, "each row must be an object");
    SweepRow r;
    for (const auto& c : t.columns) r.cells.push_back(row.contains(c) ? json_to_cell(row[c]) : "");
    t.rows.push_back(std::move(r));
  }
  finish_rows(t, where);
  if (t.rows.empty() && j.contains("points_total") && j["points_total"].is_number_unsigned()) {
    t.points_total = j["points_total"].get<std::size_t>();
  }
  return t;
}

SweepTable read_table(std::istream& in, const std::string& where) {
  while (in.peek() == ' ' || in.peek() == '\n' || in.peek() == '\r' || in.peek() == '\t') in.get();
  return in.peek() == '{' ? read_json(in, where) : read_csv(in, where);
}

SweepTable merge_tables(const std::vector<SweepTable>& shards) {
  if (shards.empty()) throw InputError("FILES", "no shard files given");
  SweepTable out;
  out.columns = shards.front().columns;
  out.points_total = 0;
  for (const auto& s : shards) {
    if (s.columns != out.columns) throw InputError("FILES", "shards have different columns (not one sweep)");
    if (!s.rows.empty()) {
      if (out.points_total != 0 && s.points_total != out.points_total) {
        throw InputError("FILES", "shards disagree on points_total (not one sweep)");
      }
      out.points_total = s.points_total;
    }
    out.rows.insert(out.rows.end(), s.rows.begin(), s.rows.end());
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    if (out.rows[i].point != i) {
      const bool dup = i > 0 && out.rows[i].point == out.rows[i - 1].point;
      throw InputError("FILES", dup ? "point " + std::to_string(out.rows[i].point) + " appears in two shards"
                                    : "point " + std::to_string(i) + " is missing (a shard file was not given)");
    }
  }
  if (out.rows.size() != out.points_total) {
    throw InputError("FILES", "only " + std::to_string(out.rows.size()) + " of " +
                                  std::to_string(out.points_total) + " points present (a shard file is missing)");
  }
  return out;
}

}  // namespace megasim
