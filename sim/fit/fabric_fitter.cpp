#include "sim/fit/fabric_fitter.hpp"

#include "core/child_process.hpp"
#include "core/units.hpp"
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/scenario/presets.hpp"

#include <fmt/format.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_vector.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

namespace commbound::sim {
namespace {

struct RowRef {
  const network::NcclTestsLog* log;
  const network::NcclTestsRow* row;
};

std::vector<RowRef> rows_in_band(const std::vector<network::NcclTestsLog>& logs, const FitOptions& o) {
  std::vector<RowRef> out;
  for (const auto& log : logs) {
    for (const auto& row : log.rows) {
      if (row.size_bytes >= o.min_bytes && row.size_bytes <= o.max_bytes) out.push_back({&log, &row});
    }
  }
  return out;
}

std::string serialize(const std::vector<LogPoint>& points) {
  std::ostringstream out;
  out.precision(17);
  for (const LogPoint& p : points) out << p.simulated_s << ' ' << p.algorithm << ' ' << p.protocol << '\n';
  return out.str();
}

// The fit's parameters from the optimizer's unbounded x (each inside its bounds).
network::FabricFit from_unbounded(const gsl_vector* x, const std::string& name) {
  network::FabricFit fit;
  fit.name = name;
  const auto& params = network::fit_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const double unit = p.lower + (p.upper - p.lower) * (1 + std::tanh(gsl_vector_get(x, i))) / 2;
    fit.*p.field = unit * p.si_per_unit;
  }
  return fit;
}

double to_unbounded(const network::FitParameter& p, double value_in_unit) {
  const double u = std::clamp((value_in_unit - p.lower) / (p.upper - p.lower), 1e-6, 1 - 1e-6);
  return std::atanh(2 * u - 1);
}

struct Problem {
  const Scenario* scenario;
  const std::vector<network::NcclTestsLog>* logs;
  const FitOptions* options;
  std::string name;
  std::function<void(int)> progress;
  int evaluations = 0;
  std::optional<Error> error{};
};

int residuals(const gsl_vector* x, void* data, gsl_vector* f) {
  auto* pb = static_cast<Problem*>(data);
  auto points = simulate_logs(*pb->scenario, from_unbounded(x, pb->name), *pb->logs, *pb->options);
  ++pb->evaluations;
  if (pb->progress) pb->progress(pb->evaluations);
  if (!points) {
    pb->error = points.error();
    return GSL_EFAILED;
  }
  for (std::size_t i = 0; i < points->size(); ++i) {
    gsl_vector_set(f, i, std::log((*points)[i].simulated_s / (*points)[i].measured_s));
  }
  return GSL_SUCCESS;
}

}  // namespace

double LogPoint::measured_bus_bw_bytes_per_s() const {
  return size_bytes / measured_s * network::bus_bw_factor(op, ranks);
}
double LogPoint::simulated_bus_bw_bytes_per_s() const {
  return size_bytes / simulated_s * network::bus_bw_factor(op, ranks);
}

std::pair<double, double> abs_error_summary(const std::vector<LogPoint>& points) {
  if (points.empty()) return {0, 0};
  std::vector<double> e;
  for (const LogPoint& p : points) e.push_back(std::abs(p.error()));
  const double max = *std::max_element(e.begin(), e.end());
  return {gsl_stats_median(e.data(), 1, e.size()), max};
}

Status check_healthy(const network::NcclTestsLog& log, const Scenario& scenario) {
  const network::NodeType& node = scenario.cluster.node;
  if (!log.op) return Error{log.path + ": " + log.op_name + " is not a collective commbound models"};
  if (log.gpus_per_node() != node.gpus) {
    return Error{fmt::format("{}: {} GPUs per node, but the scenario's node type {} has {}", log.path,
                             log.gpus_per_node(), node.name, node.gpus)};
  }
  for (const auto& row : log.rows) {
    for (const auto* t : {&row.out_of_place, row.in_place ? &*row.in_place : nullptr}) {
      if (t == nullptr) continue;
      if (t->wrong > 0) {
        return Error{fmt::format("{}:{}: #wrong = {}: NCCL returned wrong data; a faulty fabric or GPU, not one to fit",
                                 log.path, row.line, t->wrong)};
      }
      if (auto issue = network::measurement_issue(scenario.cluster, *log.op, log.nodes, log.ranks, row.size_bytes,
                                                  t->bus_bw_bytes_per_s)) {
        return Error{fmt::format("{}:{}: {}; not a fabric to fit", log.path, row.line, *issue)};
      }
    }
  }
  return Ok{};
}

Expected<std::vector<LogPoint>> simulate_logs(const Scenario& scenario, const std::optional<network::FabricFit>& fit,
                                              const std::vector<network::NcclTestsLog>& logs, const FitOptions& options) {
  const std::vector<RowRef> rows = rows_in_band(logs, options);
  if (rows.empty()) {
    return Error{fmt::format("no log row between {:.0f} MiB and {:.0f} MiB", options.min_bytes / (1 << 20),
                             options.max_bytes / (1 << 20))};
  }
  int max_nodes = 1;
  for (const RowRef& r : rows) max_nodes = std::max(max_nodes, r.log->nodes);
  network::ClusterSpec cluster = scenario.cluster;
  cluster.nodes = max_nodes;
  if (fit) cluster.fabric.fit = fit;
  std::vector<network::SweepPoint> sweep;
  for (const RowRef& r : rows) {
    if (!r.log->op) return Error{r.log->path + ": " + r.log->op_name + " is not a collective commbound models"};
    sweep.push_back({*r.log->op, r.log->nodes, r.row->size_bytes, r.log->algorithm, std::nullopt});
  }
  auto text = run_in_child([&]() -> Expected<std::string> {
    auto platform = network::Platform::create(cluster);
    if (!platform) return platform.error();
    auto simulated = network::run_points(**platform, scenario.nccl, sweep, network::Fidelity::fluid, {});
    if (!simulated) return simulated.error();
    std::vector<LogPoint> points(simulated->size());
    for (std::size_t i = 0; i < points.size(); ++i) {
      points[i].simulated_s = (*simulated)[i].result.time_s;
      points[i].algorithm = network::to_string((*simulated)[i].result.choice.algorithm);
      points[i].protocol = network::to_string((*simulated)[i].result.choice.protocol);
    }
    return serialize(points);
  });
  if (!text) return text.error();
  std::istringstream in(*text);
  std::vector<LogPoint> points;
  for (const RowRef& r : rows) {
    LogPoint p;
    p.path = r.log->path;
    p.line = r.row->line;
    p.op = *r.log->op;
    p.nodes = r.log->nodes;
    p.ranks = r.log->ranks;
    p.size_bytes = r.row->size_bytes;
    p.measured_s = r.row->out_of_place.time_s;
    if (!(in >> p.simulated_s >> p.algorithm >> p.protocol)) return Error{"the simulation returned too few points"};
    points.push_back(std::move(p));
  }
  return points;
}

Expected<FitReport> fit_fabric(const Scenario& scenario, const std::vector<network::NcclTestsLog>& logs,
                               const FitOptions& options, const std::string& name,
                               const std::function<void(int)>& progress) {
  for (const auto& log : logs) {
    if (Status ok = check_healthy(log, scenario); !ok) return ok.error();
  }
  const std::size_t n_points = rows_in_band(logs, options).size();
  const auto& params = network::fit_parameters();
  if (n_points < params.size() * 2) {
    return Error{fmt::format("{} log rows between {:.0f} MiB and {:.0f} MiB: too few to fit {} parameters (need {})",
                             n_points, options.min_bytes / (1 << 20), options.max_bytes / (1 << 20), params.size(),
                             params.size() * 2)};
  }
  Problem problem{&scenario, &logs, &options, name, progress};
  gsl_multifit_nlinear_fdf fdf{};
  fdf.f = residuals;
  fdf.df = nullptr;  // finite differences
  fdf.n = n_points;
  fdf.p = params.size();
  fdf.params = &problem;
  gsl_multifit_nlinear_parameters fdf_params = gsl_multifit_nlinear_default_parameters();
  fdf_params.h_df = 1e-3;  // a simulated time is smooth in x only at this scale (message counts are whole)
  std::unique_ptr<gsl_multifit_nlinear_workspace, decltype(&gsl_multifit_nlinear_free)> w(
      gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fdf_params, n_points, params.size()),
      gsl_multifit_nlinear_free);
  std::unique_ptr<gsl_vector, decltype(&gsl_vector_free)> x(gsl_vector_alloc(params.size()), gsl_vector_free);
  // Start at NCCL's own view: its Simple base latency, hwLat[NVLink] and hwLat[NET] for the ring,
  // no serialized message cost, the link preset's efficiency, NVLS's hwLat.
  const network::NcclConstants& nccl = scenario.nccl;
  const double start[] = {nccl.base(network::Algorithm::ring, network::Protocol::simple) * kUsPerS,
                          nccl.hop(network::Algorithm::ring, network::HopClass::nvlink, network::Protocol::simple) * kUsPerS,
                          nccl.hop(network::Algorithm::ring, network::HopClass::net, network::Protocol::simple) * kUsPerS,
                          1.0,
                          scenario.cluster.fabric.link.efficiency,
                          nccl.hop(network::Algorithm::nvls, network::HopClass::nvlink, network::Protocol::simple) * kUsPerS};
  for (std::size_t i = 0; i < params.size(); ++i) gsl_vector_set(x.get(), i, to_unbounded(params[i], start[i]));
  gsl_set_error_handler_off();
  gsl_multifit_nlinear_init(x.get(), &fdf, w.get());
  if (problem.error) return *problem.error;
  int info = 0;
  const int status = gsl_multifit_nlinear_driver(options.max_iterations, 1e-12, 1e-12, 0.0, nullptr, nullptr, &info, w.get());
  if (problem.error) return *problem.error;
  if (status != GSL_SUCCESS && status != GSL_EMAXITER) {
    return Error{std::string("the least-squares fit failed: ") + gsl_strerror(status)};
  }
  FitReport report;
  report.fit = from_unbounded(gsl_multifit_nlinear_position(w.get()), name);
  auto points = simulate_logs(scenario, report.fit, logs, options);
  if (!points) return points.error();
  report.points = std::move(*points);
  report.evaluations = problem.evaluations + 1;
  std::tie(report.median_abs_error, report.max_abs_error) = abs_error_summary(report.points);
  return report;
}

void write_fabric_fit(std::ostream& out, const FitReport& report, const Scenario& scenario,
                      const std::vector<network::NcclTestsLog>& logs, const std::string& tool_version) {
  toml::array log_tables;
  for (const auto& log : logs) {
    std::vector<LogPoint> mine;
    for (const LogPoint& p : report.points) {
      if (p.path == log.path) mine.push_back(p);
    }
    const auto [median, max] = abs_error_summary(mine);
    toml::array sizes;
    toml::array errors;
    for (const LogPoint& p : mine) {
      sizes.push_back(p.size_bytes);
      errors.push_back(std::round(p.error() * 1e4) / 1e4);
    }
    toml::table t{{"file", log.path},
                  {"op", log.op_name},
                  {"nodes", log.nodes},
                  {"gpus_per_node", log.gpus_per_node()},
                  {"nccl_version", log.nccl_version.empty() ? "not printed" : log.nccl_version},
                  {"algorithm", log.algorithm ? network::to_string(*log.algorithm) : "chosen by NCCL"},
                  {"median_abs_error", std::round(median * 1e4) / 1e4},
                  {"max_abs_error", std::round(max * 1e4) / 1e4},
                  {"sizes_bytes", sizes},
                  {"error", errors}};
    log_tables.push_back(std::move(t));
  }
  toml::table provenance{{"tool", tool_version},
                         {"hardware", fmt::format("{} ({}), {} x {} NICs, {} topology", scenario.cluster.node.name,
                                                  scenario.cluster.node.gpu, scenario.cluster.node.nics,
                                                  scenario.cluster.fabric.link.name,
                                                  network::to_string(scenario.cluster.fabric.topology))},
                         {"scenario", scenario.path},
                         {"method", "least squares on ln(simulated / measured out-of-place time), GSL trust-region LM"},
                         {"points", static_cast<int64_t>(report.points.size())},
                         {"evaluations", report.evaluations},
                         {"median_abs_error", std::round(report.median_abs_error * 1e4) / 1e4},
                         {"max_abs_error", std::round(report.max_abs_error * 1e4) / 1e4},
                         {"log", log_tables}};
  toml::table head{{"name", report.fit.name},
                   {"description", fmt::format("NCCL as implemented on {} + {}, fitted to {} nccl-tests log(s)",
                                               scenario.cluster.node.name, scenario.cluster.fabric.link.name, logs.size())},
                   {"node_type", scenario.cluster.node.name},
                   {"link", scenario.cluster.fabric.link.name}};
  out << "# Written by commbound fit-fabric: NCCL as implemented on one fabric (network/fabric_fit.hpp).\n"
      << head << "\n\n[parameters]  # fitted; [bounds] in the key's unit, and why those bounds\n";
  for (const network::FitParameter& p : network::fit_parameters()) {
    out << fmt::format("{:<16} = {:<9.4g} # [{}, {}] {}\n", p.key, report.fit.*p.field / p.si_per_unit, p.lower,
                       p.upper, p.reason);
  }
  out << "\n# error = simulated / measured - 1 per row (out-of-place time), at the fitted parameters.\n"
      << toml::table{{"provenance", provenance}} << "\n";
}

}  // namespace commbound::sim
