// Every parallel layout of the paper scenarios runs or is refused with a one-line reason: tensor
// and pipeline degrees 1-16, ZeRO-2 and ZeRO-3, with and without activation recomputation, on each
// paper scenario's cluster as its file sets it. A layout search enumerates exactly these; an abort
// (as "segment pool exhausted" was, 33 of them) would end it. Each layout is simulated in its own
// child process (two at a time), so a crash is seen as a crash, not as the test's own death.
// Recomputation replays a layer's forward between the collectives the layout already issues, so a
// layout that fits in memory without it is simulated without it only; with it, it is loaded and its
// memory worked out (the 256-GPU scenario's 100 layouts took 438 s of CI's two cores simulated
// both ways). A layout of more than 32 GPUs is simulated with pp micro-batches per replica once its
// memory is worked out at its full batch (fewest_micro_batches.hpp; the same scenario's layouts
// still took 344 s simulated whole).
#include "core/child_process.hpp"
#include "sim/run/training_run.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/memory_model.hpp"
#include "tests/sim/fewest_micro_batches.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace commbound::sim {
namespace {

class Layouts : public ::testing::TestWithParam<const char*> {};

TEST_P(Layouts, EveryLayoutRunsOrIsRefusedWithOneLine) {
  const std::string path = std::string("scenarios/paper/") + GetParam() + ".toml";
  const Presets presets(default_calibration_dir());
  std::vector<Scenario> valid;
  std::vector<std::string> names;
  int refused = 0, fits_without_recompute = 0, cuts = 0;
  for (int tp : {1, 2, 4, 8, 16}) {
    for (int pp : {1, 2, 4, 8, 16}) {
      for (int zero : {2, 3}) {
        bool fits_without = false;
        for (const char* recompute : {"false", "true"}) {
          const std::string name = "tp " + std::to_string(tp) + " pp " + std::to_string(pp) + " ZeRO-" +
                                   std::to_string(zero) + " recompute " + recompute;
          auto file = ScenarioFile::load(path,
                                         {"parallel.tp=" + std::to_string(tp), "parallel.pp=" + std::to_string(pp),
                                          "parallel.zero_stage=" + std::to_string(zero),
                                          std::string("training.activation_checkpointing=") + recompute},
                                         presets);
          if (!file) {
            ++refused;
            const std::string& why = file.error().message;
            EXPECT_FALSE(why.empty()) << name;
            EXPECT_EQ(why.find('\n'), std::string::npos) << name << ": " << why;
            continue;
          }
          const TrainingSpec& t = *file->scenario().training;
          const bool fits = memory_per_gpu(t, file->scenario().cluster.node.nccl_channels).fits();
          if (t.recompute == Recompute::none) {
            fits_without = fits;
          } else if (fits_without) {
            ++fits_without_recompute;
            continue;
          }
          valid.push_back(file->scenario());
          names.push_back(name);
          if (valid.back().cluster.gpus() > testing::kFullBatchMaxGpus) {
            cuts += testing::cut_to_fewest_micro_batches(*valid.back().training);
          }
        }
      }
    }
  }
  const auto results = run_in_children(valid.size(), 2, [&](std::size_t i) -> Expected<std::string> {
    auto run = simulate_training(valid[i]);
    if (!run) return run.error();
    return std::string(run->metrics.oom ? "oom" : "simulated");
  });
  int simulated = 0, oom = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i]) << names[i] << ": " << results[i].error().message;
    (*results[i] == "oom" ? oom : simulated) += 1;
  }
  EXPECT_EQ(refused + simulated + oom + fits_without_recompute, 100);
  EXPECT_GT(simulated, 0);
  std::printf("%s: %d simulated, %d out of memory (%d of these cut to pp micro-batches), %d refused, %d with "
              "recomputation left to their run without\n",
              GetParam(), simulated, oom, cuts, refused, fits_without_recompute);
}

INSTANTIATE_TEST_SUITE_P(Paper, Layouts,
                         ::testing::Values("a100_vs_h100", "context_length", "cp_vs_tp", "model_parallel_7b_256gpu",
                                           "model_sizes", "strong_scaling_gbs32", "weak_scaling_7b"));

}  // namespace
}  // namespace commbound::sim
