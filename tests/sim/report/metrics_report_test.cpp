// The metrics table's lines under its rows (sim/report/metrics_report.hpp): what the board's power
// limit cost, one figure when the rows agree and the range when they do not.
#include "sim/report/metrics_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace commbound::sim {
namespace {

Metrics priced(double power_limit_slowdown, double compute_bound_share) {
  Metrics m;
  m.gpus = 8;
  m.cost_model_source = "measured";
  m.cost_model_table = "tiny.toml";
  m.power_limit_slowdown = power_limit_slowdown;
  m.compute_bound_share = compute_bound_share;
  return m;
}

std::string table_of(const std::vector<std::pair<std::string, Metrics>>& rows) {
  std::ostringstream out;
  write_metrics(out, rows, Format::table, "test");
  return out.str();
}

TEST(MetricsReport, SaysWhatThePowerLimitCost) {
  // GEMMs and attention, 70% of compute, slowed 1.14x by the limit.
  EXPECT_NE(table_of({{"a", priced(1.14, 0.7)}}).find("# at the power limit GEMMs and attention run x1.140 (70% of compute)"),
            std::string::npos);
  // Two rows: the range of each figure.
  EXPECT_NE(table_of({{"a", priced(1.082, 0.63)}, {"b", priced(1.091, 0.66)}})
                .find("# at the power limit GEMMs and attention run x1.082 to x1.091 (63-66% of compute)"),
            std::string::npos);
  // Below the limit: nothing said.
  EXPECT_EQ(table_of({{"a", priced(1, 0.7)}}).find("power limit"), std::string::npos);
}

}  // namespace
}  // namespace commbound::sim
