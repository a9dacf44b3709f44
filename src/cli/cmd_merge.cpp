// `megasim merge FILES... [--csv OUT] [--json]`: joins `megasim sweep --shard` outputs into the
// table the unsharded sweep prints (byte for byte, in the shards' own format).
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "megasim/core/error.hpp"
#include "megasim/sweep/sweep_table.hpp"

namespace megasim {

namespace {

struct MergeArgs {
  std::vector<std::string> files;
  std::string csv;
  bool json = false;
};

}  // namespace

void register_merge_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Join the shard outputs of `megasim sweep --shard I/N` into one table");
  cmd->add_option("FILES", args->files, "shard outputs (CSV or JSON, any order)")->required();
  cmd->add_option("--csv", args->csv, "write the merged table as CSV to OUT");
  cmd->add_flag("--json", args->json, "print the merged table as JSON on stdout");
  cmd->callback([args, &ctx] {
    std::vector<SweepTable> shards;
    for (const auto& file : args->files) {
      std::ifstream in(file, std::ios::binary);
      if (!in) throw InputError("FILES", "cannot read \"" + file + "\"");
      shards.push_back(read_table(in, "FILES: " + file));
    }
    const SweepTable merged = merge_tables(shards);
    if (!args->csv.empty()) {
      std::ofstream f(args->csv, std::ios::binary);
      if (!f) throw InputError("--csv", "cannot write \"" + args->csv + "\"");
      write_csv(merged, f);
    }
    if (args->json) {
      write_json(merged, ctx.out);
    } else if (args->csv.empty()) {
      write_csv(merged, ctx.out);
    }
  });
}

}  // namespace megasim
