// Uses nothing but the one user header: load a bundled job with overrides, simulate it on both
// engines, serialise the report, and see bad input arrive as megasim::InputError.
//   megasim_consumer EXPECTED_CATALOG_PREFIX
#include <megasim/megasim.hpp>

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAIL: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: megasim_consumer EXPECTED_CATALOG_PREFIX\n");
    return 2;
  }
  const std::string prefix = argv[1];
  const megasim::Job job =
      megasim::load_job("megascale-175b-12288", {"cluster.num_gpus=768", "training.global_batch_size=768"});
  check(job.catalog_dir.string().rfind(prefix, 0) == 0,
        "catalogs come from the installed prefix, got " + job.catalog_dir.string());
  check(job.spec.cluster.num_gpus == 768, "the override was applied");

  const megasim::StepReport analytic = megasim::simulate(job, {.engine = megasim::Engine::analytic});
  const megasim::StepReport des = megasim::simulate(job);
  for (const auto* r : {&analytic, &des}) {
    check(r->step_time_s > 0 && r->mfu > 0 && r->mfu < 1, r->engine + ": a positive step time and an MFU in (0, 1)");
  }
  check(analytic.engine == "analytic" && des.engine == "des", "each report names its engine");

  const std::string json = megasim::to_json(des);
  check(json.find("\"schema_version\": 1") != std::string::npos, "to_json has schema_version 1");
  check(json.find("\"step_time_s\"") != std::string::npos, "to_json has step_time_s");

  try {
    megasim::load_job("megascale-175b-12288", {"parallel.tensor_model_parallel_size=3"});
    check(false, "TP 3 must be refused");
  } catch (const megasim::InputError& e) {
    check(std::string(e.what()).rfind("parallel.tensor_model_parallel_size: ", 0) == 0,
          std::string("InputError names the field: ") + e.what());
  }
  std::printf("consumer: step %.4f s (des), %.4f s (analytic), MFU %.3f; %s\n", des.step_time_s,
              analytic.step_time_s, des.mfu, failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
