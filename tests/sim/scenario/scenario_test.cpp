// Scenario loading: valid files become SI structs; every kind of bad input becomes one error that
// names the file, the line, the dotted key and the value.
#include "sim/report/output.hpp"
#include "sim/scenario/pp_layout.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_schema.hpp"
#include "sim/scenario/size_limits.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <iterator>
#include <sstream>

namespace commbound::sim {
namespace {

const Presets kPresets("calibration");

// Writes `text` to a scratch scenario file and returns its path.
std::string scenario_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const char* kValid = R"(# a valid scenario
[cluster]
node_type = "dgx-h100"
nodes = 4

[fabric]
topology = "fat-tree"
link = "ib-ndr"
routing = "ecmp"
oversubscription = 2.0
)";

TEST(Scenario, LoadsInSiUnits) {
  auto sc = load_scenario(scenario_file("valid.toml", kValid), {}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->cluster.nodes, 4);
  EXPECT_EQ(sc->cluster.node.gpus, 8);
  EXPECT_DOUBLE_EQ(sc->cluster.fabric.link.bw_bytes_per_s, 50e9);          // 400 Gb/s
  EXPECT_DOUBLE_EQ(sc->cluster.node.nvlink.bw_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(sc->cluster.fabric.switch_latency_s, 0.13e-6);
  EXPECT_EQ(sc->cluster.fabric.routing, network::Routing::ecmp);
  EXPECT_DOUBLE_EQ(sc->nccl.base(network::Algorithm::ring, network::Protocol::simple), 8.4e-6);
  EXPECT_DOUBLE_EQ(sc->nccl.hop(network::Algorithm::tree, network::HopClass::net, network::Protocol::ll128), 8.5e-6);
}

TEST(Scenario, SetOverridesUseTheSameDottedKeys) {
  auto sc = load_scenario(scenario_file("set.toml", kValid),
                          {"cluster.nodes=16", "fabric.link=roce-400g", "nccl.protocol=\"LL128\""}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->cluster.nodes, 16);
  EXPECT_EQ(sc->cluster.fabric.link.name, "roce-400g");
  ASSERT_TRUE(sc->nccl_options.protocol.has_value());
  EXPECT_EQ(*sc->nccl_options.protocol, network::Protocol::ll128);
}

TEST(Scenario, CustomLinkTable) {
  auto sc = load_scenario(scenario_file("custom.toml", std::string(kValid) + R"(
[fabric.link]
bandwidth_GBps = 100.0
efficiency = 0.9
latency_us = 0.2
)"), {"fabric.routing=adaptive"}, kPresets);
  // kValid already sets fabric.link = "ib-ndr": TOML forbids defining it twice.
  ASSERT_FALSE(sc);
  auto ok = load_scenario(scenario_file("custom2.toml", R"([cluster]
node_type = "dgx-h100"
[fabric.link]
bandwidth_GBps = 100.0
efficiency = 0.9
latency_us = 0.2
)"), {}, kPresets);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_DOUBLE_EQ(ok->cluster.fabric.link.effective_bw_bytes_per_s(), 90e9);
}

// A node described in the scenario ([cluster.node], keys as in calibration/nodes.toml) instead of
// a preset: a one-GPU workstation; its links are presets by name. Both ways at once is an error.
TEST(Scenario, NodeDescribedInTheScenario) {
  const std::string node = R"([cluster.node]
gpu = "h100-sxm5"
gpus = 1
nics = 1
nvlink = "nvlink4"
pcie = "pcie-gen5-x16"
nic = "ib-ndr"
)";
  auto sc = load_scenario(scenario_file("workstation.toml", "[cluster]\nnodes = 2\n" + node), {"cluster.node.nvls=false"},
                          kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->cluster.node.gpus, 1);
  EXPECT_EQ(sc->cluster.node.nics, 1);
  EXPECT_EQ(sc->cluster.gpus(), 2);
  EXPECT_EQ(sc->cluster.fabric.link.name, "ib-ndr");  // the node's nic, as for a preset
  auto both = load_scenario(scenario_file("both.toml", "[cluster]\nnode_type = \"dgx-h100\"\n" + node), {}, kPresets);
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("node_type or [cluster.node], not both"), std::string::npos) << both.error().message;
}

// Every example scenario loads with the presets it names (a preset file error would show here first).
// The Blackwell nodes as their datasheets give them: DGX B200 8 GPUs of 180 GB, NVLink 5 at 900 GB/s
// per direction; GB200 NVL72 72 GPUs in one NVLink domain.
TEST(Scenario, EveryExampleLoads) {
  for (const auto& entry : std::filesystem::directory_iterator("scenarios/examples")) {
    auto sc = load_scenario(entry.path().string(), {}, kPresets);
    EXPECT_TRUE(sc) << entry.path() << ": " << sc.error().message;
  }
  auto b200 = load_scenario("scenarios/examples/dgx-b200.toml", {}, kPresets);
  ASSERT_TRUE(b200);
  EXPECT_EQ(b200->cluster.node.gpus, 8);
  EXPECT_DOUBLE_EQ(b200->cluster.node.nvlink.bw_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(b200->training->gpu.memory_bytes, 180e9);
  auto nvl72 = load_scenario("scenarios/examples/gb200-nvl72.toml", {}, kPresets);
  ASSERT_TRUE(nvl72);
  EXPECT_EQ(nvl72->cluster.node.gpus, 72);
  EXPECT_EQ(nvl72->cluster.gpus(), 288);
  // HGX H100 4-GPU: 18 NVLink 4 links per GPU, 6 to each of its 3 peers: 150 GB/s per pair and
  // direction before NCCL's 0.824 efficiency, no NVSwitch and so no NVLS.
  auto hgx = load_scenario("scenarios/examples/hgx-h100-4gpu.toml", {}, kPresets);
  ASSERT_TRUE(hgx);
  EXPECT_EQ(hgx->cluster.node.nvlink_topology, network::NvlinkTopology::mesh);
  EXPECT_NEAR(hgx->cluster.node.nvlink_link_bw_bytes_per_s(), 150e9 * 0.824, 1e3);
  EXPECT_FALSE(hgx->cluster.node.nvls);
  auto workstation = load_scenario("scenarios/examples/workstation-1gpu.toml", {}, kPresets);
  ASSERT_TRUE(workstation);
  EXPECT_EQ(workstation->cluster.node.name, "workstation-1gpu");
  EXPECT_EQ(workstation->cluster.gpus(), 1);
}

// A mesh node is modelled up to 4 GPUs and has no switch to reduce in: either mistake is one error
// naming the key.
TEST(Scenario, MeshNodeRejectsNvlsAndMoreThanFourGpus) {
  const std::string node = "[cluster.node]\ngpu = \"h100-sxm5\"\nnvlink = \"nvlink4\"\npcie = \"pcie-gen5-x16\"\n"
                           "nic = \"ib-ndr\"\nnvlink_topology = \"mesh\"\n";
  auto nvls = load_scenario(scenario_file("mesh-nvls.toml", "[cluster]\n" + node + "gpus = 4\nnics = 4\nnvls = true\n"),
                            {}, kPresets);
  ASSERT_FALSE(nvls);
  EXPECT_NE(nvls.error().message.find("nvlink_topology"), std::string::npos) << nvls.error().message;
  EXPECT_NE(nvls.error().message.find("no NVSwitch"), std::string::npos) << nvls.error().message;
  auto big = load_scenario(scenario_file("mesh-8.toml", "[cluster]\n" + node + "gpus = 8\nnics = 8\n"), {}, kPresets);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("up to 4 GPUs"), std::string::npos) << big.error().message;
}

// Every point of every study's sweep is a valid scenario (docs/figures/update.sh runs them all):
// e.g. nvl72_vs_8gpu pairs each node type with its own node counts at equal GPU counts, and the
// diloco study's islands divide its 2048 replicas.
TEST(Scenario, EveryStudyPointLoads) {
  for (const auto& entry : std::filesystem::directory_iterator("scenarios/studies")) {
    auto file = ScenarioFile::load(entry.path().string(), {}, kPresets);
    ASSERT_TRUE(file) << entry.path() << ": " << file.error().message;
    for (std::size_t i = 0; i < file->points(); ++i) {
      auto point = file->point(i);
      EXPECT_TRUE(point) << entry.path() << " point " << i << ": " << point.error().message;
    }
  }
  auto nvl72 = ScenarioFile::load("scenarios/studies/nvl72_vs_8gpu.toml", {}, kPresets);
  ASSERT_TRUE(nvl72);
  for (std::size_t i = 0; i + 4 < 8; ++i) {  // rack i against DGX B200 point i + 4: the same GPUs
    EXPECT_EQ(nvl72->point(i)->cluster.gpus(), nvl72->point(i + 4)->cluster.gpus()) << i;
  }
}

// [sweep] grid = "cartesian": every combination of the keys' values, the first key outermost;
// values must then hold one array per key.
TEST(Scenario, CartesianSweepRunsEveryCombination) {
  const std::string head = "[cluster]\nnode_type = \"dgx-h100\"\n[sweep]\nkey = [\"cluster.nodes\", \"fabric.routing\"]\n"
                           "grid = \"cartesian\"\n";
  auto file = ScenarioFile::load(scenario_file("grid.toml", head + "values = [[1, 2, 4], [\"ecmp\", \"adaptive\"]]\n"), {},
                                 kPresets);
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_EQ(file->points(), 6u);
  EXPECT_EQ(file->point_name(0), "cluster.nodes=1 fabric.routing=ecmp");
  EXPECT_EQ(file->point_name(1), "cluster.nodes=1 fabric.routing=adaptive");
  EXPECT_EQ(file->point_name(5), "cluster.nodes=4 fabric.routing=adaptive");
  auto four = file->point(4);
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(four->cluster.nodes, 4);
  EXPECT_EQ(four->cluster.fabric.routing, network::Routing::ecmp);
  auto bad = ScenarioFile::load(scenario_file("bad_grid.toml", head + "values = [[1, 2], 4]\n"), {}, kPresets);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("one array of values per key (2)"), std::string::npos) << bad.error().message;
}

// A DiLoCo scenario of 7 lines (a key added at its end is on line 8).
const char* kDiloco = "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 4\n[model]\nname = \"llama2-7b\"\n"
                      "[parallel]\nstrategy = \"diloco\"\n";

// 4 nodes = 32 replicas in 4 islands of 8 GPUs, synchronised every 100 inner steps.
TEST(Scenario, DilocoReadsItsIslandsAndInterval) {
  auto sc = load_scenario(scenario_file("diloco.toml", std::string(kDiloco) + "diloco_islands = 4\ndiloco_sync_every = 100\n"),
                          {}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->training->strategy, Strategy::diloco);
  EXPECT_EQ(sc->training->diloco_islands, 4);
  EXPECT_EQ(sc->training->diloco_sync_every, 100);
  EXPECT_EQ(sc->training->shard_ranks(), 8);
}

// Llama-2 7B (32 layers) on 4 pipeline stages of 2 DGX H100 nodes.
const char* kUneven = "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 2\n[model]\nname = \"llama2-7b\"\n"
                      "[training]\nglobal_batch = 16\nmicro_batch = 1\n[parallel]\npp = 4\n";

// 32 layers on 4 stages with first 6 and last 6: the middle two stages take (32 - 12) / 2 = 10.
// With 2 virtual stages every stage's layers halve: chunks 3, 5, 5, 3 then again 3, 5, 5, 3, so
// virtual stage k starts at 1 + the layers of virtual stages 0 .. k - 1: 1, 4, 9, 14, 17, 20, 25, 30.
TEST(Scenario, UnevenPipelineStagesSplitTheRestEvenly) {
  auto sc = load_scenario(scenario_file("uneven.toml", std::string(kUneven) +
                                                           "pp_first_stage_layers = 6\npp_last_stage_layers = 6\n"
                                                           "virtual_stages = 2\n"),
                          {}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  const TrainingSpec& t = *sc->training;
  EXPECT_EQ(t.stage_layers(0), 6);
  EXPECT_EQ(t.stage_layers(1), 10);
  EXPECT_EQ(t.stage_layers(2), 10);
  EXPECT_EQ(t.stage_layers(3), 6);
  const std::vector<int> first = {1, 4, 9, 14, 17, 20, 25, 30};
  for (int vs = 0; vs < 8; ++vs) EXPECT_EQ(t.first_layer(vs), first[static_cast<std::size_t>(vs)]) << vs;
  EXPECT_EQ(t.first_layer(7) + t.chunk_layers(7) - 1, 32);
}

// A free-form layout of the same 32 layers on 4 stages x 2 chunks (8 virtual stages): the
// embedding and 1 layer, then 5, 5, 5 | 5, 5, 5, and 1 layer with the loss: 1 + 30 + 1 = 32. The
// stages hold chunks k and k + 4: 1 + 5 = 6, 10, 10, 5 + 1 = 6; virtual_stages follows (8 / 4).
TEST(Scenario, PipelineLayoutSetsEachVirtualStage) {
  auto sc = load_scenario(scenario_file("layout.toml", std::string(kUneven) + "pp_layout = \"Et|(t*5|)*6,tL\"\n"), {},
                          kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  const TrainingSpec& t = *sc->training;
  EXPECT_EQ(t.virtual_stages, 2);
  EXPECT_EQ(t.vstage_layers, (std::vector<int>{1, 5, 5, 5, 5, 5, 5, 1}));
  EXPECT_EQ(t.stage_layers(0), 6);
  EXPECT_EQ(t.stage_layers(1), 10);
  EXPECT_EQ(t.stage_layers(3), 6);
  EXPECT_EQ(t.first_layer(4), 17);  // after 1 + 5 + 5 + 5
  EXPECT_EQ(t.microbatch_group(), 4);
}

// Megatron-Core's layout syntax, symbol by symbol: repeats of a symbol and of a group, commas and
// spaces ignored, empty stages kept; and what it refuses, each with its reason.
TEST(PipelineLayoutText, ExpandsAndChecks) {
  auto even = parse_pp_layout("E t*2 | t,t | tt | ttL", 4, 8, 0);
  ASSERT_TRUE(even) << even.error().message;
  EXPECT_EQ(even->layers, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(even->chunks, 1);
  auto empty = parse_pp_layout("E||(tt|)*2t|L", 2, 5, 0);  // E, -, tt, tt, t, L: 6 stages over pp 2
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->layers, (std::vector<int>{0, 0, 2, 2, 1, 0}));
  EXPECT_EQ(empty->chunks, 3);
  auto mtp = parse_pp_layout("Et|tmL", 2, 2, 1);
  ASSERT_TRUE(mtp) << mtp.error().message;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"Et|t|tL", "3 stages, not a multiple of pp = 2"},
      {"Et|ttL", "3 decoder layers"},
      {"t|EtL", "'E' is in virtual stage 1"},
      {"EtL|t", "'L' is in virtual stage 0"},
      {"EEt|tL", "2 'E'"},
      {"Et|tx", "'x' is not a layout symbol"},
      {"E(t|tL", "'(' without its ')'"},
      {"Et)|tL", "')' without its '('"},
      {"Et*|tL", "'*' needs a count"},
      {"Em|ttL", "'m' is in virtual stage 0"},
      {"(((t*1000)*1000)*1000)", "expands to more than 1048576 symbols"},
  };
  for (const auto& [text, reason] : refused) {
    auto bad = parse_pp_layout(text, 2, 2, text.find('m') != std::string::npos ? 1 : 0);
    ASSERT_FALSE(bad) << text;
    EXPECT_NE(bad.error().message.find(reason), std::string::npos) << text << ": " << bad.error().message;
  }
}

// Found by fuzzing: a [sweep] point resolves a copy of the document, and toml++ copies no source
// places, so an error about a key of the file (not the swept one) named "<input>" instead of the
// file and line. Point 1 (7 nodes, 56 GPUs) cannot hold tp = 4 x pp = 4 = 16.
TEST(Scenario, SweepPointErrorsNameTheFileAndLine) {
  const std::string path = scenario_file("sweep_point_place.toml",
                                         "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 4\n[model]\nname = \"llama2-7b\"\n"
                                         "[parallel]\nstrategy = \"fsdp\"\ntp = 4\npp = 4\n"
                                         "[sweep]\nkey = \"cluster.nodes\"\nvalues = [4, 7]\n");
  auto file = ScenarioFile::load(path, {}, kPresets);
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_TRUE(file->point(0)) << file->point(0).error().message;
  auto p = file->point(1);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message.rfind(path + ":8: parallel.tp = 4: tp x pp x cp = 16 does not divide the 56 GPUs", 0), 0u)
      << p.error().message;
}

// Mixtral 8x7B (8 experts, top-2) on 2 DGX H100 nodes, expert parallelism 8; the [parallel] table
// is the last, so its keys follow at line 11 on.
const char* kMoe = "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 2\n[model]\nname = \"mixtral-8x7b\"\n"
                   "[training]\nglobal_batch = 16\nmicro_batch = 1\n[parallel]\nep = 8\n";

// An MoE layout reads its expert parallelism and router: ep 8 of the 16 ranks, so each expert has
// 16 / 8 = 2 replicas; Zipf routing with its exponent and seed.
TEST(Scenario, MixtureOfExpertsReadsEpAndTheRouter) {
  auto sc = load_scenario(scenario_file("moe.toml", std::string(kMoe) + "[moe]\nrouting = \"zipf\"\nzipf_s = 1.2\nseed = 7\n"),
                          {}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  const TrainingSpec& t = *sc->training;
  EXPECT_EQ(t.ep, 8);
  EXPECT_EQ(t.expert_replicas(), 2);
  EXPECT_EQ(t.routing.kind, moe::RoutingKind::zipf);
  EXPECT_DOUBLE_EQ(t.routing.zipf_s, 1.2);
  EXPECT_EQ(t.routing.seed, 7u);
}

// The gradient reduction's dtype follows each framework's default unless set: Megatron's
// distributed optimizer (zero_stage 1) reduces bf16 parameters' gradients in fp32, PyTorch FSDP in
// the parameters' bf16; NeMo's performance recipes turn Megatron's off.
TEST(Scenario, GradReduceDtypeDefaultsByFramework) {
  const std::string path = scenario_file("grad_dtype.toml", kUneven);
  auto fsdp = load_scenario(path, {}, kPresets);
  ASSERT_TRUE(fsdp) << fsdp.error().message;
  EXPECT_FALSE(fsdp->training->grad_reduce_fp32);
  auto zero1 = load_scenario(path, {"parallel.zero_stage=1"}, kPresets);
  ASSERT_TRUE(zero1) << zero1.error().message;
  EXPECT_TRUE(zero1->training->grad_reduce_fp32);
  auto zero1_bf16 = load_scenario(path, {"parallel.zero_stage=1", "training.grad_reduce_dtype=bf16"}, kPresets);
  ASSERT_TRUE(zero1_bf16) << zero1_bf16.error().message;
  EXPECT_FALSE(zero1_bf16->training->grad_reduce_fp32);
  auto bad = load_scenario(path, {"training.grad_reduce_dtype=fp16"}, kPresets);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("training.grad_reduce_dtype = \"fp16\""), std::string::npos) << bad.error().message;
}

struct BadCase {
  const char* name;
  std::string text;
  std::vector<std::string> overrides;
  std::vector<std::string> expected_parts;  // each must appear in the one-line error
};

class ScenarioErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScenarioErrors, NameFileLineKeyAndValue) {
  const BadCase& c = GetParam();
  const std::string path = scenario_file(std::string(c.name) + ".toml", c.text);
  auto sc = load_scenario(path, c.overrides, kPresets);
  ASSERT_FALSE(sc) << c.name;
  const std::string& msg = sc.error().message;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const auto& part : c.expected_parts) {
    std::string want = part;  // "$FILE" stands for the scenario's path
    if (const auto at = want.find("$FILE"); at != std::string::npos) want.replace(at, 5, path);
    EXPECT_NE(msg.find(want), std::string::npos) << "missing \"" << want << "\" in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ScenarioErrors,
    ::testing::Values(
        BadCase{"bad_toml", "[cluster]\nnode_type = \"dgx-h100\"\nnodes = = 4\n", {}, {"$FILE", ":3:", "invalid TOML"}},
        BadCase{"unknown_key", "[cluster]\nnode_type = \"dgx-h100\"\nnodez = 4\n", {},
                {"$FILE", ":3:", "cluster.nodez = 4", "unknown key"}},
        BadCase{"unknown_section", "[cluster]\nnode_type = \"dgx-h100\"\n[modle]\nname = \"x\"\n", {},
                {"$FILE", ":3:", "modle", "unknown key"}},
        BadCase{"zero_nodes", "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 0\n", {},
                {"$FILE", ":3:", "cluster.nodes = 0", "between 1 and"}},
        BadCase{"nodes_type", "[cluster]\nnode_type = \"dgx-h100\"\nnodes = \"four\"\n", {},
                {"$FILE", ":3:", "cluster.nodes = \"four\"", "expected an integer"}},
        BadCase{"negative_bandwidth",
                "[cluster]\nnode_type = \"dgx-h100\"\n[fabric.link]\nbandwidth_GBps = -50.0\nefficiency = 0.9\n"
                "latency_us = 0.1\n",
                {}, {"$FILE", ":4:", "fabric.link.bandwidth_GBps = -50", "between"}},
        BadCase{"unknown_node_type", "[cluster]\nnode_type = \"dgx-z100\"\n", {},
                {"$FILE", ":2:", "cluster.node_type = \"dgx-z100\"", "dgx-h100"}},
        BadCase{"bad_choice", "[cluster]\nnode_type = \"dgx-h100\"\n[fabric]\nrouting = \"random\"\n", {},
                {"$FILE", ":4:", "fabric.routing = \"random\"", "adaptive, ecmp"}},
        BadCase{"oversubscription", "[cluster]\nnode_type = \"dgx-h100\"\n[fabric]\noversubscription = 0.5\n", {},
                {"$FILE", ":4:", "fabric.oversubscription = 0.5"}},
        BadCase{"set_zero_nodes", "[cluster]\nnode_type = \"dgx-h100\"\n", {"cluster.nodes=0"},
                {"--set cluster.nodes=0", "cluster.nodes = 0"}},
        BadCase{"set_unknown_key", "[cluster]\nnode_type = \"dgx-h100\"\n", {"fabric.speed=9"},
                {"--set fabric.speed=9", "unknown key"}},
        BadCase{"set_malformed", "[cluster]\nnode_type = \"dgx-h100\"\n", {"nodes"}, {"--set nodes", "key=value"}},
        BadCase{"missing_cluster", "description = \"nothing\"\n", {}, {"$FILE", "[cluster]"}},
        // DiLoCo on 4 nodes (32 replicas): islands must split the replicas evenly, H >= 1.
        BadCase{"diloco_islands", std::string(kDiloco) + "diloco_islands = 3\n", {},
                {"$FILE", ":8:", "parallel.diloco_islands = 3", "must divide the 32 parameter replicas"}},
        BadCase{"diloco_sync_every", std::string(kDiloco) + "diloco_sync_every = 0\n", {},
                {"$FILE", ":8:", "parallel.diloco_sync_every = 0", "between 1 and"}},
        BadCase{"diloco_strategy", std::string(kDiloco) + "diloco_islands = 4\n", {"parallel.strategy=dilocco"},
                {"--set parallel.strategy=dilocco", "diloco"}},
        // 32 - 7 = 25 layers do not split over the other 3 stages; 7 over 2 chunks does not either.
        BadCase{"uneven_rest", std::string(kUneven) + "pp_first_stage_layers = 7\n", {},
                {"$FILE", ":11:", "parallel.pp_first_stage_layers = 7", "25", "3 stages"}},
        BadCase{"uneven_chunks", std::string(kUneven) + "pp_first_stage_layers = 5\npp_last_stage_layers = 7\n",
                {"parallel.virtual_stages=2"}, {"virtual_stages", "5 layers of pipeline stage 0"}},
        // A layout's faults name the key and the model; it and the first/last keys exclude each
        // other; virtual_stages must agree with it; Megatron-Core's micro-batch groups: from pp to
        // the micro-batches (4 per replica here, 16 at a global batch of 64), the last group at
        // least pp.
        BadCase{"layout_layers", std::string(kUneven) + "pp_layout = \"Et*8|t*8|t*8|t*7L\"\n", {},
                {"$FILE", ":11:", "parallel.pp_layout = \"Et*8|t*8|t*8|t*7L\"", "31 decoder layers", "llama2-7b"}},
        BadCase{"layout_and_first", std::string(kUneven) + "pp_layout = \"Et*8|t*8|t*8|t*8L\"\npp_first_stage_layers = 8\n",
                {}, {"parallel.pp_layout", "not both"}},
        BadCase{"layout_chunks", std::string(kUneven) + "pp_layout = \"Et*8|t*8|t*8|t*8L\"\nvirtual_stages = 2\n", {},
                {"$FILE", ":12:", "parallel.virtual_stages = 2", "1 chunks a stage"}},
        BadCase{"group_below_pp", std::string(kUneven) + "virtual_stages = 2\npp_microbatch_group = 3\n", {},
                {"$FILE", ":12:", "parallel.pp_microbatch_group = 3", "from pp = 4 to the 4 micro-batches"}},
        BadCase{"group_short_tail", std::string(kUneven) + "virtual_stages = 2\npp_microbatch_group = 7\n",
                {"training.global_batch=64"}, {"parallel.pp_microbatch_group = 7", "last group of 2 of the 16"}},
        BadCase{"group_without_chunks", std::string(kUneven) + "pp_microbatch_group = 4\n", {},
                {"parallel.pp_microbatch_group = 4", "needs virtual_stages > 1"}},
        // Megatron-LM gathers under the forward only what it reduced under the backward.
        BadCase{"param_gather_overlap_without_grad_overlap",
                std::string(kUneven) + "zero_stage = 1\noverlap_grad_reduce = false\n", {},
                {"$FILE", "parallel.overlap_param_gather", "needs overlap_grad_reduce = true"}},
        BadCase{"param_gather_with_optimizer_without_interleaving",
                std::string(kUneven) + "zero_stage = 1\noverlap_param_gather_with_optimizer_step = true\n", {},
                {"$FILE", ":12:", "parallel.overlap_param_gather_with_optimizer_step = true", "interleaved pipeline"}},
        // ep must divide the 8 experts and the 16 ranks of the stage; tp beside MoE needs sequence
        // parallelism; a dense model has no experts to shard or route; top_k past the experts.
        BadCase{"ep_not_dividing_experts", std::string(kMoe), {"parallel.ep=16"},
                {"--set parallel.ep=16", "must divide the model's 8 routed experts"}},
        BadCase{"ep_not_dividing_ranks", std::string(kMoe) + "pp = 4\n", {"parallel.ep=8"},
                {"parallel.ep", "must divide the tp x cp x dp = 4 GPUs of a pipeline stage"}},
        BadCase{"expert_tp_not_dividing_width", std::string(kMoe) + "expert_tp = 3\n", {},
                {"parallel.expert_tp = 3", "must divide the experts' inner size 14336"}},
        BadCase{"moe_tp_without_sp", std::string(kMoe) + "tp = 2\n", {},
                {"sequence_parallel", "needs sequence parallelism"}},
        BadCase{"ep_on_a_dense_model", std::string(kUneven) + "ep = 2\n", {},
                {"$FILE", ":11:", "parallel.ep = 2", "llama2-7b has no experts"}},
        BadCase{"top_k_past_experts",
                "[cluster]\nnode_type = \"dgx-h100\"\n[model]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 1\n"
                "ffn = 128\nvocab = 10\nexperts = 4\ntop_k = 5\nexpert_ffn = 32\n",
                {}, {"$FILE", ":11:", "model.top_k = 5", "must be 1 .. experts (4)"}},
        BadCase{"moe_on_a_dense_model", std::string(kUneven) + "[moe]\nrouting = \"zipf\"\n", {},
                {"$FILE", ":12:", "moe.routing", "llama2-7b has no experts"}},
        // Megatron-Core overlaps shared experts with its all-to-all dispatcher only; padding needs a capacity.
        BadCase{"shared_expert_overlap_with_deepep", std::string(kMoe) + "[moe]\nshared_expert_overlap = true\n",
                {"moe.dispatcher=hierarchical"}, {"moe.shared_expert_overlap = true", "needs dispatcher = \"nccl\""}},
        BadCase{"padding_without_capacity", std::string(kMoe) + "[moe]\npad_to_capacity = true\n", {},
                {"$FILE", "moe.pad_to_capacity = true", "needs capacity_factor > 0"}},
        // Apex's bf16 optimizer state is a distributed (ZeRO-1) optimizer's.
        BadCase{"bf16_optimizer_state_without_zero1", std::string(kUneven), {"training.optimizer_dtype=bf16"},
                {"--set training.optimizer_dtype=bf16", "parallel.zero_stage = 1"}},
        BadCase{"histogram_without_file", std::string(kMoe) + "[moe]\nrouting = \"histogram\"\n", {},
                {"moe.routing", "needs moe.histogram"}},
        BadCase{"histogram_missing_file", std::string(kMoe) + "[moe]\nrouting = \"histogram\"\nhistogram = \"no-such.txt\"\n",
                {}, {"moe.histogram", "no-such.txt: cannot be read"}},
        // Megatron's mla_up_proj replays latent attention's up-projections: not on standard attention.
        BadCase{"mla_up_proj_on_standard_attention", std::string(kUneven), {"training.activation_checkpointing=mla_up_proj"},
                {"training.activation_checkpointing = \"mla_up_proj\"", "llama2-7b has standard attention"}},
        // Found by fuzzing: an error about a key of a section the file lacks named "<input>";
        // here [training] is absent, and its default micro-batch (the whole local batch: one
        // micro-batch) does not feed 4 interleaved stages.
        BadCase{"absent_section_names_the_file",
                "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 2\n[model]\nname = \"llama2-7b\"\n"
                "[parallel]\npp = 4\nvirtual_stages = 2\n",
                {}, {"$FILE: [training] training.micro_batch", "multiple of pp (4)"}},
        BadCase{"tp_overlap_without_sp", std::string(kUneven) + "tp = 2\ntp_overlap = true\n", {},
                {"$FILE", ":12:", "parallel.tp_overlap = true", "needs sequence_parallel = true"}},
        // Ulysses gives each rank heads / cp: 40 heads do not split over 16 ranks.
        BadCase{"ulysses_heads_not_divisible", std::string(kUneven),
                {"model.name=llama2-13b", "parallel.pp=1", "parallel.cp=16", "parallel.cp_comm=a2a"},
                {"parallel.cp_comm = \"a2a\"", "llama2-13b has 40 heads and 40 KV heads per tensor-parallel rank"}},
        // ZB-H1 splits the backward of one model chunk per stage, of a dense layer.
        BadCase{"zero_bubble_interleaved", std::string(kUneven) + "virtual_stages = 2\npp_schedule = \"zb-h1\"\n", {},
                {"$FILE", "parallel.pp_schedule = \"zb-h1\"", "needs virtual_stages = 1 (is 2)"}},
        BadCase{"zero_bubble_moe", std::string(kUneven), {"model.name=qwen3-30b-a3b", "parallel.pp_schedule=zb-h1"},
                {"parallel.pp_schedule = \"zb-h1\"", "qwen3-30b-a3b has experts"}},
        BadCase{"uneven_without_pipeline", std::string(kUneven) + "pp_last_stage_layers = 8\n", {"parallel.pp=1"},
                {"pp_last_stage_layers", "needs pp > 1"}},
        // Found by fuzzing: a value toml++ writes over several lines (a long array) or a string
        // holding a newline is shown on one line, a long one cut short.
        BadCase{"sweep_values_over_lines",
                "[cluster]\nnode_type = \"dgx-h100\"\n[sweep]\nkey = [\"cluster.nodes\", \"parallel.tp\"]\n"
                "values = [['fsdp', 8, 32], ['fsdp', 8, 64], ['fsdp', 8, 128], ['fsdp', 8, 256], ['hsdp', 8, 32],\n"
                "  ['hsdp', 8, 64], ['hsdp', 8, 128], ['hsdp', 8, 256], ['hsdp', 16, 256], ['hsdp', 32, 256]]\n",
                {}, {"$FILE", ":5:", "sweep.values = [ [ 'fsdp', 8, 32 ], [ 'fsdp', 8, 64 ]", "...: each value must be an array of 2"}},
        BadCase{"string_with_newline", "[cluster]\nnode_type = \"dgx\\nz100\\u001b\"\n", {},
                {"$FILE", ":2:", "cluster.node_type = \"dgx\\nz100\\x1b\""}}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ParseList, SizesAndRanges) {
  auto v = parse_list("--bytes", "1K,1M:4M,1G", ListKind::sizes_bytes);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, (std::vector<double>{1024, 1048576, 2097152, 4194304, 1073741824}));
  auto n = parse_list("--nodes", "1:8", ListKind::node_counts);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, (std::vector<double>{1, 2, 4, 8}));
  EXPECT_FALSE(parse_list("--nodes", "2.5", ListKind::node_counts));
  EXPECT_FALSE(parse_list("--nodes", "4K", ListKind::node_counts));
  EXPECT_FALSE(parse_list("--bytes", "1X", ListKind::sizes_bytes));
  EXPECT_FALSE(parse_list("--bytes", "8:4", ListKind::sizes_bytes));
}

// "1G" and "1GiB" are 2^30 bytes, as nccl-tests' -b and -e read "1G"; "1GB" reads as 10^9 to most
// people, so it is refused with the spellings that are not ambiguous rather than taken either way.
TEST(ParseList, BinarySuffixesOnly) {
  auto gib = parse_list("--bytes", "1GiB,64MiB", ListKind::sizes_bytes);
  ASSERT_TRUE(gib) << gib.error().message;
  EXPECT_EQ(*gib, (std::vector<double>{1073741824, 67108864}));
  auto gb = parse_list("--bytes", "1GB", ListKind::sizes_bytes);
  ASSERT_FALSE(gb);
  EXPECT_EQ(gb.error().message,
            "--bytes 1GB: \"GB\" is ambiguous: write G or GiB (binary multiples, as nccl-tests' -b and -e read them), "
            "or the number of bytes");
}

// Each kind's bounds, said as they are: 1T is the largest buffer (no GPU holds more), node counts
// are 1 to 2^20 (cluster.nodes' bound) and -1 is refused as 0 is, as not a positive integer.
TEST(ParseList, BoundsAreSaidAsTheyAre) {
  auto tib = parse_list("--bytes", "1T", ListKind::sizes_bytes);
  ASSERT_TRUE(tib) << tib.error().message;
  EXPECT_EQ(tib->front(), 1099511627776.0);
  for (const char* huge : {"1e19", "1e20", "1e30", "2T", "1K:2T"}) {
    auto too_big = parse_list("--bytes", huge, ListKind::sizes_bytes);
    ASSERT_FALSE(too_big) << huge;
    EXPECT_NE(too_big.error().message.find(": more than 1T (1099511627776 bytes), the largest buffer taken: no GPU's memory"),
              std::string::npos)
        << too_big.error().message;
  }
  auto overflow = parse_list("--bytes", "1e400", ListKind::sizes_bytes);
  ASSERT_FALSE(overflow);
  EXPECT_EQ(overflow.error().message, "--bytes 1e400: out of range of a double");
  auto nodes = parse_list("--nodes", "1:1e9", ListKind::node_counts);
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().message,
            "--nodes 1e9: more than 1048576 nodes, the largest cluster a scenario describes (cluster.nodes)");
  for (const char* not_positive : {"-1", "0"}) {
    auto refused = parse_list("--nodes", not_positive, ListKind::node_counts);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, std::string("--nodes ") + not_positive + ": must be a positive integer");
  }
}


// The counts a scenario implies are checked where its keys are read: 32,769 DGX H100 nodes are
// 262,152 GPUs, past 2^18; 65,537 micro-batches of one sequence are past 2^16.
TEST(SizeLimits, ClustersAndMicroBatchesAreBoundedWhereRead) {
  const Presets& presets = kPresets;
  auto at_limit = ScenarioFile::load("scenarios/examples/dgx-h100-ib-ndr.toml",
                                     {"cluster.nodes=32768", "fabric.topology=single-switch"}, presets);
  EXPECT_TRUE(at_limit) << at_limit.error().message;
  auto past = ScenarioFile::load("scenarios/examples/dgx-h100-ib-ndr.toml",
                                 {"cluster.nodes=32769", "fabric.topology=single-switch"}, presets);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().message, "--set cluster.nodes=32769: cluster.nodes = 32769: 32769 nodes of 8 GPUs are 262152 GPUs, "
                                  "more than 262144 (docs/limits.md)");
  auto batches = ScenarioFile::load("scenarios/examples/workstation-1gpu.toml",
                                    {"training.micro_batch=1", "training.global_batch=65537"}, presets);
  ASSERT_FALSE(batches);
  EXPECT_NE(batches.error().message.find("training.micro_batch = 1: 65537 sequences per replica in micro-batches of 1 "
                                         "are 65537 micro-batches, more than 65536"),
            std::string::npos)
      << batches.error().message;
}

// A cartesian [sweep] is sized before it is expanded: 3 axes of 101 values are 1,030,301 points.
TEST(SizeLimits, ACartesianGridIsSizedBeforeItIsBuilt) {
  std::string axis = "[";
  for (int v = 1; v <= 101; ++v) axis += std::to_string(v) + (v < 101 ? ", " : "]");
  const std::string path = ::testing::TempDir() + "grid_limit.toml";
  std::ofstream(path) << "[cluster]\nnode_type = \"dgx-h100\"\n[model]\nname = \"llama2-1b\"\n[sweep]\n"
                      << "key = [\"cluster.nodes\", \"training.seq_len\", \"training.local_batch\"]\n"
                      << "grid = \"cartesian\"\nvalues = [" << axis << ", " << axis << ", " << axis << "]\n";
  auto grid = ScenarioFile::load(path, {}, kPresets);
  ASSERT_FALSE(grid);
  EXPECT_NE(grid.error().message.find("a cartesian grid of 1030301 points, more than 1000000"), std::string::npos)
      << grid.error().message;
}

// A generated section of a doc: `file` must hold exactly `generated` between its markers. When it
// does not, the current file is written beside the test's scratch files, to copy over `file`.
void expect_generated_section(const std::string& file, const std::string& begin, const std::string& end,
                              const std::string& generated) {
  std::ifstream in(file);
  ASSERT_TRUE(in) << "run from the source root";
  std::ostringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto a = doc.find(begin);
  const auto b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << file << " has no " << begin;
  ASSERT_NE(b, std::string::npos) << file << " has no " << end;
  const std::string current = doc.substr(0, a + begin.size()) + generated + doc.substr(b);
  if (current != doc) {
    const std::string out = ::testing::TempDir() + std::filesystem::path(file).filename().string();
    std::ofstream(out) << current;
    FAIL() << file << " is not what the code generates: cp " << out << " " << file;
  }
}

// docs/scenarios.md's key tables are generated from the schema.
TEST(ScenarioSchema, DocsTablesAreCurrent) {
  expect_generated_section("docs/scenarios.md",
                           "<!-- BEGIN keys generated from sim/scenario/scenario_schema.cpp: do not edit -->\n",
                           "<!-- END keys -->\n", scenario_keys_markdown());
}

// docs/limits.md's table is generated from the limits.
TEST(SizeLimits, DocsTableIsCurrent) {
  expect_generated_section("docs/limits.md",
                           "<!-- BEGIN limits generated from sim/scenario/size_limits.cpp: do not edit -->\n",
                           "<!-- END limits -->\n", size_limits_markdown());
}

// Every key of the schema reads back what the writer writes (each is read and written by one entry).
TEST(ScenarioSchema, EveryKeyHasADocLineAndChoicesHaveNames) {
  for (const ScenarioSection& section : scenario_sections()) {
    for (const auto& k : section.keys) {
      EXPECT_FALSE(std::string(k.doc).empty()) << section.name << "." << k.key;
      if (k.type == KeyType::choice) {
        EXPECT_FALSE(k.names.empty()) << section.name << "." << k.key;
      }
      EXPECT_EQ(find_scenario_key(std::string(section.name).empty() ? k.key : std::string(section.name) + "." + k.key), &k);
    }
  }
}

// [[job]] tables: each job's nodes placed (spread jobs interleave: floor(i * 8 / 4) = 0, 2, 4, 6
// of 8 free nodes, then the 4 left), its training resolved on its own node count (4 DGX H100
// nodes: 32 GPUs of data parallelism), the scenario's own training unset.
TEST(Scenario, JobsArePlacedAndResolvedOnTheirOwnNodes) {
  auto sc = load_scenario("tests/sim/data/two_jobs.toml", {}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_FALSE(sc->training.has_value());
  ASSERT_EQ(sc->jobs.size(), 2u);
  EXPECT_EQ(sc->jobs[0].name, "a");
  EXPECT_EQ(sc->jobs[0].nodes, (NodeList{0, 2, 4, 6}));
  EXPECT_EQ(sc->jobs[1].nodes, (NodeList{1, 3, 5, 7}));
  EXPECT_EQ(sc->jobs[1].training.world(), 32);
  EXPECT_EQ(sc->jobs[1].training.dp, 32);
  EXPECT_EQ(sc->cluster.nodes, 8);
}

TEST(Scenario, JobsAndATopLevelModelAreRefused) {
  std::ifstream in("tests/sim/data/two_jobs.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.insert(text.find("[[job]]"), "[model]\nname = \"llama2-7b\"\n\n");
  auto sc = load_scenario(scenario_file("jobs_model.toml", text), {}, kPresets);
  ASSERT_FALSE(sc);
  EXPECT_NE(sc.error().message.find(":15: model = (a table): with [[job]] tables each job has its own [job.model]"),
            std::string::npos)
      << sc.error().message;
}

}  // namespace
}  // namespace commbound::sim
