// The fabric fitter: it refuses logs no healthy fabric produces, recovers a fabric from logs the
// model itself wrote, and its file reads back as written.
#include "sim/fit/fabric_fitter.hpp"
#include "sim/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace commbound::sim {
namespace {

const Presets kPresets("calibration");

Scenario h100_ib() {
  // The example without its fit: the fitter supplies its own.
  auto sc = load_scenario("scenarios/examples/dgx-h100-ib-ndr.toml", {"nccl.fit=\"\""}, kPresets);
  if (!sc) ADD_FAILURE() << sc.error().message;
  return sc ? *sc : Scenario{};
}

// A log with one out-of-place timing per size: busbw = S / t x factor, nccl-tests' definition.
network::NcclTestsLog log_of(network::CollectiveOp op, int nodes, const std::vector<std::pair<double, double>>& rows) {
  network::NcclTestsLog log;
  log.path = "synthetic_" + std::to_string(nodes) + "node_" + network::to_string(op);
  log.op_name = network::to_string(op);
  log.op = op;
  log.nodes = nodes;
  log.ranks = 8 * nodes;
  int line = 0;
  for (const auto& [size, time_s] : rows) {
    network::NcclTestsRow r;
    r.size_bytes = size;
    r.line = ++line;
    r.out_of_place = {time_s, size / time_s, size / time_s * network::bus_bw_factor(op, log.ranks), 0};
    log.rows.push_back(r);
  }
  return log;
}

TEST(FabricFitter, RefusesLogsNoHealthyFabricProduces) {
  const Scenario sc = h100_ib();
  // 2 nodes x 8 x 400G NICs: a ring moves at most 400 GB/s busbw; half of that is the health floor.
  // NVIDIA/nccl-tests issue 290's 2-node AllReduce at 8 GiB: 155 GB/s (misconfigured, "do not calibrate").
  const double big = 8589934592.0;
  const double slow_s = big / (155e9 / network::bus_bw_factor(network::CollectiveOp::all_reduce, 16));
  auto slow = check_healthy(log_of(network::CollectiveOp::all_reduce, 2, {{big, slow_s}}), sc);
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().message.find("below half"), std::string::npos) << slow.error().message;
  // Faster than the NICs: AllGather busbw bound on 2 nodes is 400 x 15/16 x 2 = 750 GB/s.
  const double fast_s = big / (800e9 / network::bus_bw_factor(network::CollectiveOp::all_gather, 16));
  auto fast = check_healthy(log_of(network::CollectiveOp::all_gather, 2, {{big, fast_s}}), sc);
  ASSERT_FALSE(fast);
  EXPECT_NE(fast.error().message.find("exceeds"), std::string::npos) << fast.error().message;
  // Wrong results.
  auto corrupt_log = log_of(network::CollectiveOp::all_reduce, 2, {{big, big / 200e9}});
  corrupt_log.rows[0].out_of_place.wrong = 3;
  auto corrupt = check_healthy(corrupt_log, sc);
  ASSERT_FALSE(corrupt);
  EXPECT_NE(corrupt.error().message.find("#wrong = 3"), std::string::npos);
  // A healthy 2-node AllReduce: 390 GB/s at 8 GiB (calibration/fabric/logs/s2g).
  EXPECT_TRUE(check_healthy(log_of(network::CollectiveOp::all_reduce, 2, {{big, big / (390e9 / 1.875)}}), sc));
}

TEST(FabricFitter, RecoversAFabricFromLogsTheModelWrote) {
  const Scenario sc = h100_ib();
  network::FabricFit truth{.name = "truth", .node_type = "dgx-h100", .link = "ib-ndr", .launch_s = 8e-6,
                           .nvlink_hop_s = 1.5e-6, .net_hop_s = 12e-6, .message_s = 4e-6,
                           .nic_efficiency = 0.85, .nvls_latency_s = 60e-6};
  std::vector<network::NcclTestsLog> logs;
  // The shapes of the shipped manifest: a ring inside one node (its NVLink hops and messages alone),
  // a ring over four nodes, NVLSTree over two, NVLS in one node.
  for (auto [op, nodes] : {std::pair{network::CollectiveOp::all_gather, 1}, std::pair{network::CollectiveOp::all_gather, 4},
                           std::pair{network::CollectiveOp::all_reduce, 2}, std::pair{network::CollectiveOp::all_reduce, 1}}) {
    std::vector<std::pair<double, double>> rows;
    for (double s = 32.0 * (1 << 20); s <= 8.0 * (1ull << 30); s *= 4) rows.push_back({s, 1.0});
    logs.push_back(log_of(op, nodes, rows));
  }
  auto written = simulate_logs(sc, truth, logs, {});
  ASSERT_TRUE(written) << written.error().message;
  std::size_t k = 0;
  for (auto& log : logs) {
    std::vector<std::pair<double, double>> rows;
    for (const auto& r : log.rows) rows.push_back({r.size_bytes, (*written)[k++].simulated_s});
    log = log_of(*log.op, log.nodes, rows);
  }
  auto report = fit_fabric(sc, logs, {}, "recovered");
  ASSERT_TRUE(report.has_value()) << report.error().message;
  // The model can reproduce its own logs: the fit must find a fabric that does, to under 1%.
  EXPECT_LT(report->median_abs_error, 0.01);
  EXPECT_LT(report->max_abs_error, 0.03);
}

TEST(FabricFitter, ItsFileReadsBackAsWritten) {
  const Scenario sc = h100_ib();
  FitReport report;
  report.fit = {.name = "roundtrip", .node_type = "dgx-h100", .link = "ib-ndr", .launch_s = 7.25e-6,
                .nvlink_hop_s = 0.5e-6, .net_hop_s = 23.5e-6, .message_s = 2.5e-6, .nic_efficiency = 0.9125,
                .nvls_latency_s = 116.5e-6};
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "fit_calibration";
  std::filesystem::create_directories(dir / "fabric");
  {
    std::ofstream out(dir / "fabric" / "roundtrip.toml");
    write_fabric_fit(out, report, sc, {}, "test");
  }
  auto back = Presets(dir).fabric_fit("roundtrip");
  ASSERT_TRUE(back) << back.error().message;
  for (const network::FitParameter& p : network::fit_parameters()) {
    EXPECT_NEAR((*back).*p.field, report.fit.*p.field, 1e-4 * report.fit.*p.field) << p.key;
  }
  EXPECT_EQ(back->node_type, "dgx-h100");
  // A fit names its hardware: another cluster may not use it.
  auto a100 = load_scenario("scenarios/examples/dgx-a100-ib-hdr.toml", {"nccl.fit=\"h100-ib-1to4\""}, kPresets);
  ASSERT_FALSE(a100);
  EXPECT_NE(a100.error().message.find("fitted on dgx-h100 + ib-ndr"), std::string::npos) << a100.error().message;
}

}  // namespace
}  // namespace commbound::sim
