#pragma once
// The table a sweep produces, its CSV and JSON forms, and the merge of shard outputs.
//
// Every cell is kept as its canonical text, formatted once when the point is simulated, so
// a table written, read back and written again is byte-identical: that is what makes
// `megasim merge` of the shards equal the unsharded run. Columns: "point", "points_total",
// one "set.<PATH>" per --vary, the A3 fields flattened with dotted names, then "error".
// JSON: {"schema_version":1,"points_total":N,"columns":[...],"rows":[{column: value,...}]}
// with empty cells as null, "true"/"false" as booleans and numeric texts as numbers.
#include <cstddef>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace megasim {

struct SweepRow {
  std::size_t point = 0;
  std::vector<std::string> cells;  // one per column, "point" included
};

struct SweepTable {
  std::size_t points_total = 0;
  std::vector<std::string> columns;
  std::vector<SweepRow> rows;  // ordered by point
};

void write_csv(const SweepTable& t, std::ostream& out);
void write_json(const SweepTable& t, std::ostream& out);

// Read a table written by write_csv / write_json; `where` names the source in errors
// (InputError(where, ...)). read_table picks the format from the first non-blank character.
SweepTable read_csv(std::istream& in, const std::string& where);
SweepTable read_json(std::istream& in, const std::string& where);
SweepTable read_table(std::istream& in, const std::string& where);

// Joins shard tables: same columns and points_total required, each point exactly once, and
// together they must cover every point (InputError("FILES", ...) otherwise).
SweepTable merge_tables(const std::vector<SweepTable>& shards);

}  // namespace megasim
