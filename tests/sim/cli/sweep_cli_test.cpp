// Sweeps beyond one process: the fully resolved scenario of a point (written back, it is the same
// scenario), the sweep folder filled by slices as a job array's tasks fill it, --collect, and a
// real Slurm job array on a one-node cluster started on this machine (tests/sim/slurm_one_node.sh;
// the test skips, saying why, only where Slurm cannot start).
#include "core/child_process.hpp"
#include "sim/run/training_run.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/resolved_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "tests/sim/fewest_micro_batches.hpp"
#include "tests/support/run_command.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace commbound::sim {
namespace {

namespace fs = std::filesystem;
using commbound::testing::file_text;
using commbound::testing::run_command;

fs::path temp_path(const std::string& name) { return fs::path(::testing::TempDir()) / name; }

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

std::string commbound(const std::string& args) { return std::string(COMMBOUND_BIN) + " " + args; }

// Metrics of every point of `file`, in [sweep] order, as JSON (every field, full precision).
std::vector<nlohmann::json> simulate(const ScenarioFile& file) {
  SweepOptions options;
  options.jobs = 2;
  auto rows = run_sweep(file, options);
  EXPECT_TRUE(rows) << rows.error().message;
  std::vector<nlohmann::json> out;
  if (rows) {
    for (const auto& r : *rows) out.push_back(nlohmann::json(r.metrics));
  }
  return out;
}

// Points that leave many keys at a default, a derived default (fabric.link from the node's NICs,
// switch latency from the link, hsdp_shard from the node, micro_batch from the batch) or a preset,
// and scenarios that describe their node and link in full.
const char* kVaried = R"(description = "resolved-scenario round trip"
[cluster]
node_type = "dgx-h100"
nodes = 2
[model]
name = "llama2-1b"
[training]
seq_len = 2048
local_batch = 2
[parallel]
strategy = "fsdp"
[sweep]
key = ["parallel.strategy", "parallel.tp", "fabric.link", "nccl.algorithm", "cluster.kernel_table", "fabric.routing"]
values = [["fsdp", 1, "ib-ndr", "auto", "auto", "adaptive"],
          ["hsdp", 2, "roce-400g", "ring", "auto", "ecmp"],
          ["ddp", 1, "ib-hdr", "tree", "roofline", "adaptive"]]
)";
// Every key away from its default (cp and the NCCL release excepted: this release is the only one
// shipped, and CP is exercised by the shipped cp_vs_tp; nccl.fidelity too: a training run refuses
// "step"), so that a key the writer left out reads
// back as its default and shows in expect_same().
const char* kCustom = R"(description = "every key set"
[cluster]
nodes = 4
kernel_table = "roofline"
[cluster.node]
name = "my-node"
gpu = "h100-sxm5"
gpus = 4
nics = 2
nvlink = "nvlink4"
pcie = "pcie-gen5-x16"
sm_arch = 80
nvls = true
nccl_channels = 8
nic = "ib-hdr"
host_cpu = "amd"
[fabric]
topology = "fat-tree"
routing = "ecmp"
oversubscription = 2.0
switch_radix = 8
levels = 2
ecmp_seed = 7
sharp = true
switch_latency_us = 0.3
[fabric.link]
name = "my-link"
bandwidth_GBps = 25
efficiency = 0.9
latency_us = 1.7
[nccl]
algorithm = "ring"
protocol = "Simple"
jitter = "off"
[model]
name = "my-model"
layers = 4
hidden = 1024
heads = 8
kv_heads = 4
ffn = 2816
vocab = 32000
[training]
seq_len = 1024
global_batch = 16
micro_batch = 1
activation_checkpointing = "selective_op"
warmup_iterations = 1
attention_kernel = "cudnn"
[parallel]
strategy = "hsdp"
zero_stage = 3
hsdp_shard = 2
diloco_islands = 2
diloco_sync_every = 7
tp = 2
pp = 2
virtual_stages = 2
sequence_parallel = true
max_inflight_allgathers = 3
ddp_bucket_MB = 50
)";

void expect_same_link(const network::LinkTech& a, const network::LinkTech& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.bw_bytes_per_s, b.bw_bytes_per_s) << a.name;
  EXPECT_EQ(a.latency_s, b.latency_s) << a.name;
  EXPECT_EQ(a.efficiency, b.efficiency) << a.name;
}

// Every field resolve() fills, compared exactly: what `b`, loaded from `a`'s resolved document,
// must reproduce.
void expect_same(const Scenario& a, const Scenario& b) {
  EXPECT_EQ(a.description, b.description);
  const network::NodeType &na = a.cluster.node, &nb = b.cluster.node;
  EXPECT_EQ(a.cluster.nodes, b.cluster.nodes);
  EXPECT_EQ(na.name, nb.name);
  EXPECT_EQ(na.gpu, nb.gpu);
  EXPECT_EQ(na.gpus, nb.gpus);
  EXPECT_EQ(na.nics, nb.nics);
  expect_same_link(na.nvlink, nb.nvlink);
  expect_same_link(na.pcie, nb.pcie);
  EXPECT_EQ(na.sm_arch, nb.sm_arch);
  EXPECT_EQ(na.nvls, nb.nvls);
  EXPECT_EQ(na.nccl_channels, nb.nccl_channels);
  EXPECT_EQ(na.host_cpu, nb.host_cpu);
  EXPECT_EQ(na.nic, nb.nic);
  const network::FabricSpec &fa = a.cluster.fabric, &fb = b.cluster.fabric;
  EXPECT_EQ(fa.topology, fb.topology);
  expect_same_link(fa.link, fb.link);
  EXPECT_EQ(fa.routing, fb.routing);
  EXPECT_EQ(fa.oversubscription, fb.oversubscription);
  EXPECT_EQ(fa.switch_radix, fb.switch_radix);
  EXPECT_EQ(fa.levels, fb.levels);
  EXPECT_EQ(fa.switch_latency_s, fb.switch_latency_s);
  EXPECT_EQ(fa.ecmp_seed, fb.ecmp_seed);
  EXPECT_EQ(fa.sharp, fb.sharp);
  EXPECT_EQ(fa.fit.has_value(), fb.fit.has_value());
  if (fa.fit && fb.fit) {
    EXPECT_EQ(fa.fit->name, fb.fit->name);
  }
  EXPECT_EQ(a.nccl.release, b.nccl.release);
  EXPECT_EQ(a.nccl_options.algorithm, b.nccl_options.algorithm);
  EXPECT_EQ(a.nccl_options.protocol, b.nccl_options.protocol);
  EXPECT_EQ(a.nccl_options.fidelity, b.nccl_options.fidelity);
  EXPECT_EQ(a.nccl_options.jitter, b.nccl_options.jitter);
  EXPECT_EQ(a.kernel_table_setting, b.kernel_table_setting);
  EXPECT_EQ(a.kernel_table == nullptr, b.kernel_table == nullptr);
  EXPECT_EQ(a.training.has_value(), b.training.has_value());
  if (!a.training || !b.training) return;
  const TrainingSpec &ta = *a.training, &tb = *b.training;
  EXPECT_EQ(ta.model.name, tb.model.name);
  EXPECT_EQ(ta.model.layers, tb.model.layers);
  EXPECT_EQ(ta.model.hidden, tb.model.hidden);
  EXPECT_EQ(ta.model.heads, tb.model.heads);
  EXPECT_EQ(ta.model.kv_heads, tb.model.kv_heads);
  EXPECT_EQ(ta.model.ffn, tb.model.ffn);
  EXPECT_EQ(ta.model.vocab, tb.model.vocab);
  EXPECT_EQ(ta.gpu.name, tb.gpu.name);
  EXPECT_EQ(ta.seq_len, tb.seq_len);
  EXPECT_EQ(ta.global_batch, tb.global_batch);
  EXPECT_EQ(ta.micro_batch, tb.micro_batch);
  EXPECT_EQ(ta.micro_batches, tb.micro_batches);
  EXPECT_EQ(ta.recompute, tb.recompute);
  EXPECT_EQ(ta.strategy, tb.strategy);
  EXPECT_EQ(ta.zero_stage, tb.zero_stage);
  EXPECT_EQ(ta.hsdp_shard, tb.hsdp_shard);
  EXPECT_EQ(ta.diloco_islands, tb.diloco_islands);
  EXPECT_EQ(ta.diloco_sync_every, tb.diloco_sync_every);
  EXPECT_EQ(ta.dp, tb.dp);
  EXPECT_EQ(ta.tp, tb.tp);
  EXPECT_EQ(ta.pp, tb.pp);
  EXPECT_EQ(ta.cp, tb.cp);
  EXPECT_EQ(ta.sequence_parallel, tb.sequence_parallel);
  EXPECT_EQ(ta.virtual_stages, tb.virtual_stages);
  EXPECT_EQ(ta.max_inflight_allgathers, tb.max_inflight_allgathers);
  EXPECT_EQ(ta.ddp_bucket_bytes, tb.ddp_bucket_bytes);
  EXPECT_EQ(ta.warmup_iterations, tb.warmup_iterations);
  EXPECT_EQ(ta.attention_kernel, tb.attention_kernel);
}

// A resolved scenario states every value the point ran with, so loading it back must give the same
// scenario: the emulator is deterministic (jitter is an expected wait or draws from a fixed seed), hence bit-identical
// metrics, and resolving it again gives the same document (a fixed point).
TEST(ResolvedScenario, LoadsBackToTheSameMetricsAndResolvesToItself) {
  const Presets presets(default_calibration_dir());
  for (const auto& [name, text] : {std::pair{"varied", kVaried}, std::pair{"custom", kCustom}}) {
    auto file = ScenarioFile::load(temp_file(std::string(name) + ".toml", text).string(), {}, presets);
    ASSERT_TRUE(file) << file.error().message;
    const std::vector<nlohmann::json> expected = simulate(*file);
    ASSERT_EQ(expected.size(), file->points());
    for (std::size_t i = 0; i < file->points(); ++i) {
      auto point = file->point(i);
      ASSERT_TRUE(point) << point.error().message;
      const std::string resolved = resolved_scenario_toml(*point, "test");
      const fs::path path = temp_file(std::string(name) + "_resolved_" + std::to_string(i) + ".toml", resolved);
      auto again = ScenarioFile::load(path.string(), {}, presets);
      ASSERT_TRUE(again) << again.error().message << "\n" << resolved;
      EXPECT_EQ(again->points(), 1u);  // one point: no [sweep]
      expect_same(*point, again->scenario());
      EXPECT_EQ(resolved_scenario_toml(again->scenario(), "test"), resolved) << name << " point " << i;
      const std::vector<nlohmann::json> metrics = simulate(*again);
      ASSERT_EQ(metrics.size(), 1u);
      EXPECT_EQ(metrics[0], expected[i]) << name << " point " << i << ": " << file->point_name(i);
    }
  }
}

// The metrics of one scenario, simulated in a child process (one SimGrid engine per process).
nlohmann::json metrics_of(const Scenario& scenario) {
  auto text = run_in_child([&]() -> Expected<std::string> {
    auto run = simulate_training(scenario);
    if (!run) return run.error();
    return nlohmann::json(run->metrics).dump();
  });
  EXPECT_TRUE(text) << text.error().message;
  return text ? nlohmann::json::parse(*text) : nlohmann::json();
}

// The same for every scenario shipped (their first [sweep] point: the smallest in each), which
// between them use every node preset, custom nodes, fabric fits, SHARP, pipelines, HSDP, MoE and
// the published runs' layouts. A point of more than kFullBatchMaxGpus GPUs has its global batch cut
// to pp micro-batches per replica (the fewest every schedule takes) before it is resolved: each of
// its keys still reaches the simulated program, in a fraction of its full batch's time (the
// 1024-GPU Llama 3.1 405B run alone simulated 76 s both ways).

TEST(ResolvedScenario, EveryShippedScenarioLoadsBackToTheSameMetrics) {
  const Presets presets(default_calibration_dir());
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator("scenarios")) {
    if (e.path().extension() == ".toml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 14u);
  int cut = 0;
  for (const fs::path& path : files) {
    auto file = ScenarioFile::load(path.string(), {}, presets);
    ASSERT_TRUE(file) << file.error().message;
    auto point = file->point(0);
    ASSERT_TRUE(point) << point.error().message;
    if (point->training && point->cluster.gpus() > testing::kFullBatchMaxGpus &&
        testing::cut_to_fewest_micro_batches(*point->training)) {
      ++cut;
    }
    const std::string resolved = resolved_scenario_toml(*point, path.string());
    auto again = ScenarioFile::load(temp_file("shipped_resolved.toml", resolved).string(), {}, presets);
    ASSERT_TRUE(again) << path << ": " << again.error().message << "\n" << resolved;
    EXPECT_EQ(resolved_scenario_toml(again->scenario(), path.string()), resolved) << path;
    expect_same(*point, again->scenario());
    if (point->training) {
      EXPECT_EQ(metrics_of(again->scenario()), metrics_of(*point)) << path;
    }
  }
  EXPECT_GT(cut, 0);
}

// Derived defaults are written as the values they took: the fabric link of a DGX H100 is its NICs'
// IB NDR, whose 0.13 us latency (calibration/links.toml) is then the switch latency; an HSDP shard
// is one node's 8 GPUs; micro_batch is the whole local batch of 2.
TEST(ResolvedScenario, WritesDerivedDefaultsAsTheirValues) {
  auto file = ScenarioFile::load(temp_file("derived.toml", kVaried).string(), {}, Presets(default_calibration_dir()));
  ASSERT_TRUE(file) << file.error().message;
  auto point = file->point(1);  // hsdp, tp 2: 16 GPUs / 2 = 8 replicas, 4 per node
  ASSERT_TRUE(point) << point.error().message;
  const toml::table doc = resolved_scenario(*point);
  EXPECT_EQ(doc["fabric"]["link"]["name"].value_or<std::string>(""), "roce-400g");
  EXPECT_EQ(doc["parallel"]["hsdp_shard"].value_or<int64_t>(0), 4);  // 8 GPUs per node / tp 2
  EXPECT_EQ(doc["training"]["micro_batch"].value_or<int64_t>(0), 2);
  EXPECT_EQ(doc["training"]["global_batch"].value_or<int64_t>(0), 16);  // 8 replicas x 2
  EXPECT_FALSE(doc.contains("sweep"));
  auto first = file->point(0);
  ASSERT_TRUE(first);
  EXPECT_NEAR(resolved_scenario(*first)["fabric"]["switch_latency_us"].value_or(0.0), 0.13, 1e-12);
}

// The small sweep both folder tests run: 4 points of 8 to 64 GPUs, each well under a second.
const std::string kSweep = "scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1,2,4,8]'";

// A local sweep's results.csv, the reference the sliced and the Slurm-run folders must reproduce.
std::string local_results(const std::string& name) {
  const fs::path dir = temp_path(name);
  fs::remove_all(dir);
  const auto r = run_command(commbound("sweep " + kSweep + " -j 2 --out-dir " + dir.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return file_text(dir / "results.csv");
}

// The slices of a job array fill the folder; until every slice ran, --collect names the missing
// points (exit 1), afterwards it writes exactly the local sweep's results, and again the same bytes.
TEST(SweepCollect, SlicesFillTheFolderAndCollectGivesTheLocalResults) {
  const std::string expected = local_results("collect_local");
  ASSERT_FALSE(expected.empty());
  const fs::path dir = temp_path("collect_emit");
  fs::remove_all(dir);
  auto r = run_command(commbound("sweep " + kSweep + " --emit slurm " + dir.string() + " --tasks 2"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string script = file_text(dir / "sweep.sbatch");
  EXPECT_NE(script.find("#SBATCH --array=0-1\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--slice \"${SLURM_ARRAY_TASK_ID}/2\""), std::string::npos) << script;
  EXPECT_NE(file_text(dir / "README").find("sbatch " + dir.string() + "/sweep.sbatch"), std::string::npos);

  // Slice 0/2 is the points 0 and 2; 1 and 3 stay missing.
  r = run_command(commbound("sweep " + kSweep + " -j 1 --out-dir " + dir.string() + " --slice 0/2"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir / "results.csv"));  // a slice writes points only
  r = run_command(commbound("sweep --collect " + dir.string()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("2 of 4 points missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("points/00001.json  cluster.nodes=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("points/00003.json  cluster.nodes=8"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("00000"), std::string::npos) << r.out;

  r = run_command(commbound("sweep " + kSweep + " -j 1 --out-dir " + dir.string() + " --slice 1/2"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = run_command(commbound("sweep --collect " + dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(file_text(dir / "results.csv"), expected);
  const std::string json = file_text(dir / "results.json");
  ASSERT_EQ(run_command(commbound("sweep --collect " + dir.string())).exit_code, 0);
  EXPECT_EQ(file_text(dir / "results.json"), json);  // idempotent
  EXPECT_EQ(file_text(dir / "results.csv"), expected);
  const auto rows = nlohmann::json::parse(json).at("rows");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3]["resolved_scenario"]["cluster"]["nodes"], 8);  // the point's own sweep value

  // A point's resolved scenario reruns alone with `commbound run`: the same metrics, only the row
  // name differs (the file's stem instead of the [sweep] value).
  r = run_command(commbound("run " + (dir / "points" / "00002.toml").string() + " --format csv"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string row = r.out.substr(r.out.rfind("00002,"));
  const std::string line = expected.substr(expected.find("cluster.nodes=4,"));
  EXPECT_EQ(row.substr(row.find(',')), line.substr(line.find(','), line.find('\n') - line.find(',') + 1));

  // Emitting into the filled folder again is refused and changes nothing.
  r = run_command(commbound("sweep " + kSweep + " --emit slurm " + dir.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(file_text(dir / "sweep.sbatch"), script);
}

// A sweep folder belongs to one sweep (scenario file, --set, --calibration). Another sweep is
// refused there and changes nothing; with --force it replaces the first one's points and results
// whole, leaving no point file of the first behind. The same sweep again resumes (nothing simulated).
TEST(SweepFolder, AnotherSweepIsRefusedAndForceLeavesNoStalePoints) {
  const fs::path dir = temp_path("sweep_other");
  fs::remove_all(dir);
  auto r = run_command(commbound("sweep " + kSweep + " -j 2 --out-dir " + dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string results = file_text(dir / "results.csv");
  auto point_files = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir / "points")) n += e.is_regular_file();
    return n;
  };
  ASSERT_EQ(point_files(), 8);  // 4 points, each NNNNN.json and NNNNN.toml

  const std::string other_set = "scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[1,2]'";
  const std::string other_scenario = "scenarios/paper/strong_scaling_gbs32.toml";
  for (const std::string& other : {other_set, other_scenario}) {
    r = run_command(commbound("sweep " + other + " -j 2 --out-dir " + dir.string()));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.out.find(dir.string() + ": holds the sweep of scenarios/paper/weak_scaling_7b.toml --set sweep.values=[1,2,4,8]; "
                         "not written into (pass --force"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(file_text(dir / "results.csv"), results);
    EXPECT_EQ(point_files(), 8);
  }

  r = run_command(commbound("sweep " + other_set + " -j 2 --out-dir " + dir.string() + " --force"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(point_files(), 4);  // the new sweep's 2 points; none of the first sweep's 00002 and 00003
  EXPECT_FALSE(fs::exists(dir / "points" / "00002.json"));
  const std::string replaced = file_text(dir / "results.csv");
  EXPECT_EQ(std::count(replaced.begin(), replaced.end(), '\n'), 3) << replaced;  // header and 2 rows

  r = run_command(commbound("sweep " + other_set + " -j 2 --out-dir " + dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 simulated, 2 kept from an earlier run"), std::string::npos) << r.out;
}

// The real thing: a one-node Slurm cluster runs the emitted job array (2 tasks of 2 points each,
// into the same folder), and --collect gives exactly the local sweep's results.csv.
TEST(SlurmSweep, JobArrayGivesTheLocalResults) {
  const fs::path dir = temp_path("slurm_emit");
  const fs::path cluster = temp_path("slurm_cluster");
  fs::remove_all(dir);
  fs::remove_all(cluster);
  auto r = run_command(commbound("sweep " + kSweep + " --emit slurm " + dir.string() + " --tasks 2"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // sbatch --wait returns when every array task has ended, with the highest task exit code.
  r = run_command("tests/sim/slurm_one_node.sh " + cluster.string() + " timeout 150 sbatch --wait " +
                  (dir / "sweep.sbatch").string());
  if (r.exit_code == 77) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out << file_text(cluster / "log" / "slurmctld.log");
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dir / "logs")) logs.push_back(file_text(e.path()));
  ASSERT_EQ(logs.size(), 2u);
  std::sort(logs.begin(), logs.end());
  EXPECT_NE(logs[0].find("slice 0/2: 2 of 4 points: 2 simulated"), std::string::npos) << logs[0];
  EXPECT_NE(logs[1].find("slice 1/2: 2 of 4 points: 2 simulated"), std::string::npos) << logs[1];
  r = run_command(commbound("sweep --collect " + dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(file_text(dir / "results.csv"), local_results("slurm_local"));
}

}  // namespace
}  // namespace commbound::sim
