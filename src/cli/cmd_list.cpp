// `megasim list gpus|clusters|models|systems|jobs`: what the bundled catalogs hold.
#include <memory>
#include <string>

#include "commands.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

void register_list_command(CLI::App& app, CliContext& ctx) {
  auto kind = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("list", "List catalog entries: gpus, clusters, models, systems");
  cmd->add_option("KIND", *kind, "gpus | clusters | models | systems")->required();
  cmd->callback([kind, &ctx] {
    static const char* const kKinds[] = {"gpus", "clusters", "models", "systems"};
    bool valid = false;
    for (const char* k : kKinds) valid = valid || *kind == k;
    if (!valid) {
      throw InputError("KIND", "unknown catalog \"" + *kind +
                                   "\"; valid: gpus, clusters, models, systems");
    }
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    for (const auto& name : catalog.names(*kind)) {
      const std::string summary = catalog.description(*kind, name);
      ctx.out << name;
      if (!summary.empty()) ctx.out << "  —  " << summary;
      ctx.out << "\n";
    }
  });
}

}  // namespace megasim
