#include "sim/report/metrics_report.hpp"

#include "core/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace commbound::sim {
namespace {

// "453 compute ops at their own row of calibration/h100-sxm5.toml, 3539 by fallback (elementwise_nearest
// 3539)".
std::string cost_note(const Metrics& m) {
  const CostSummary& c = m.cost_summary;
  if (m.cost_model_source == "roofline") return "every compute op by the datasheet roofline (no kernel table)";
  if (m.cost_model_source == "trace") return "every compute op at its duration in the replayed trace";
  if (m.oom && c.exact_ops == 0 && c.fallback_ops == 0) {
    return "no op priced: the layout does not fit, and its program, past the size limits (docs/limits.md), was not built";
  }
  std::string note = std::to_string(c.exact_ops) + " compute ops at their own row of " + m.cost_model_table + ", " +
                     std::to_string(c.fallback_ops) + " by fallback";
  std::string kinds;
  for (const auto& [how, n] : c.fallbacks) kinds += (kinds.empty() ? "" : ", ") + how + " " + std::to_string(n);
  return note + (kinds.empty() ? "" : " (" + kinds + ")");
}

// What each way of falling back means, for the ways the rows used (kernel_table.hpp's price()).
std::vector<std::string> fallback_meanings(const std::vector<std::pair<std::string, Metrics>>& rows) {
  static const std::vector<std::pair<std::string, std::string>> kMeanings = {
      {"_nearest", "nearest: a shape the table lacks, at the achieved FLOP/s or bytes/s of the nearest measured "
                   "shape of its kind (docs/calibration.md)"},
      {"_roofline", "roofline: no comparable row of its kind, at the table's own roofline"},
      {"gemm_fp8_ratio", "gemm_fp8_ratio: an FP8 GEMM, its bf16 time x the FP8 / bf16 ratio measured at the nearest shape"},
      {"gemm_fp8_derived", "gemm_fp8_derived: an FP8 GEMM, its bf16 time / the datasheet's FP8 speed-up (no FP8 row)"}};
  std::vector<std::string> meanings;
  for (const auto& [suffix, meaning] : kMeanings) {
    const bool used = std::any_of(rows.begin(), rows.end(), [&suffix = suffix](const auto& row) {
      return std::any_of(row.second.cost_summary.fallbacks.begin(), row.second.cost_summary.fallbacks.end(),
                         [&suffix](const auto& way) {
                           const std::string& how = way.first;
                           return how.size() >= suffix.size() && how.compare(how.size() - suffix.size(), suffix.size(), suffix) == 0;
                         });
    });
    if (used) meanings.push_back(meaning);
  }
  return meanings;
}

// Each distinct text of `field` over the rows, in order, joined by " | ".
template <class Field>
std::string distinct(const std::vector<std::pair<std::string, Metrics>>& rows, Field field) {
  std::vector<std::string> seen;
  for (const auto& row : rows) {
    const std::string& text = field(row.second);
    if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
  }
  return fmt::format("{}", fmt::join(seen, " | "));
}

// "at the power limit GEMMs and attention x1.082 to x1.091 (63-66% of compute)"; "" when no row
// pays the limit.
std::string power_limit_note(const std::vector<std::pair<std::string, Metrics>>& rows) {
  double low = 0, high = 0, share_low = 0, share_high = 0;
  bool any = false;
  for (const auto& [name, m] : rows) {
    if (m.power_limit_slowdown == 1) continue;
    if (!any) low = high = m.power_limit_slowdown, share_low = share_high = m.compute_bound_share;
    low = std::min(low, m.power_limit_slowdown), high = std::max(high, m.power_limit_slowdown);
    share_low = std::min(share_low, m.compute_bound_share), share_high = std::max(share_high, m.compute_bound_share);
    any = true;
  }
  if (!any) return "";
  const std::string slowdown = low == high ? fmt::format("x{:.3f}", low) : fmt::format("x{:.3f} to x{:.3f}", low, high);
  const std::string share = std::lround(100 * share_low) == std::lround(100 * share_high)
                                ? fmt::format("{:.0f}%", 100 * share_low)
                                : fmt::format("{:.0f}-{:.0f}%", 100 * share_low, 100 * share_high);
  return "at the power limit GEMMs and attention run " + slowdown + " (" + share + " of compute)";
}

// The rows as every sheet format writes them: the CSV's columns (an out-of-memory row has no timing)
// and each row as a JSON object with its memory breakdown and how its compute was priced.
Sheet metrics_sheet(const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& title) {
  Sheet sheet;
  sheet.title = title;
  sheet.columns = {"scenario", "gpus", "iteration_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
                   "mfu", "compute_s", "comm_s", "exposed_comm_s", "exposed_comm_fraction", "power_w_per_gpu",
                   "tokens_per_joule", "memory_bytes_per_gpu", "oom", "cost_model_source", "cost_model_table",
                   "cost_model_exact_ops", "cost_model_fallback_ops"};
  for (const auto& [name, m] : rows) {
    const std::vector<std::string> cost = {m.cost_model_source, m.cost_model_table,
                                           std::to_string(m.cost_summary.exact_ops),
                                           std::to_string(m.cost_summary.fallback_ops)};
    std::vector<std::string> line;
    if (m.oom) {  // not simulated: no timing to report
      line = {name, std::to_string(m.gpus), "", "", "", "", "", "", "", "", "", "", "",
              fmt::format("{:.0f}", m.memory_bytes_per_gpu), "1"};
    } else {
      line = {name,
              std::to_string(m.gpus),
              fmt::format("{:.6f}", m.iteration_s),
              fmt::format("{:.1f}", m.tokens_per_s),
              fmt::format("{:.2f}", m.tokens_per_s_per_gpu),
              fmt::format("{:.2f}", m.model_tflops_per_gpu),
              fmt::format("{:.4f}", m.mfu),
              fmt::format("{:.6f}", m.compute_s),
              fmt::format("{:.6f}", m.comm_s),
              fmt::format("{:.6f}", m.exposed_comm_s),
              fmt::format("{:.4f}", m.exposed_comm_fraction),
              fmt::format("{:.1f}", m.power_w_per_gpu),
              fmt::format("{:.4f}", m.tokens_per_joule),
              fmt::format("{:.0f}", m.memory_bytes_per_gpu),
              "0"};
    }
    line.insert(line.end(), cost.begin(), cost.end());
    sheet.lines.push_back(std::move(line));

    nlohmann::json mem = nlohmann::json::object();
    for (const auto& [what, bytes] : m.memory.bytes) mem[what] = bytes;
    nlohmann::json fallbacks = nlohmann::json::object();
    for (const auto& [how, n] : m.cost_summary.fallbacks) fallbacks[how] = n;
    nlohmann::json row{{"scenario", name}, {"gpus", m.gpus}, {"oom", m.oom},
                       {"memory_bytes_per_gpu", m.memory_bytes_per_gpu}, {"memory_breakdown_bytes", mem}};
    if (!m.oom) {  // an out-of-memory row was not simulated: its timing fields are absent
      row.update({{"iteration_s", m.iteration_s}, {"tokens_per_s", m.tokens_per_s},
                  {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu}, {"model_tflops_per_gpu", m.model_tflops_per_gpu},
                  {"mfu", m.mfu}, {"compute_s", m.compute_s}, {"comm_s", m.comm_s},
                  {"exposed_comm_s", m.exposed_comm_s}, {"exposed_comm_fraction", m.exposed_comm_fraction},
                  {"power_w_per_gpu", m.power_w_per_gpu}, {"tokens_per_joule", m.tokens_per_joule}});
    }
    row.update({{"cost_model_source", m.cost_model_source},
                {"cost_model_table", m.cost_model_table},
                {"cost_model_description", m.cost_model_description},
                {"cost_model_exact_ops", m.cost_summary.exact_ops},
                {"cost_model_fallback_ops", m.cost_summary.fallback_ops},
                {"cost_model_fallbacks", fallbacks},
                {"power_model", m.power_model_description},
                {"power_limit_slowdown", m.power_limit_slowdown},
                {"compute_bound_share", m.compute_bound_share}});
    sheet.rows.push_back(std::move(row));
  }
  return sheet;
}

}  // namespace

void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, Format format,
                   const std::string& title) {
  if (is_sheet_format(format)) return write_sheet(out, metrics_sheet(rows, title), format);
  out << "# " << title << "\n";
  out << "# compute " << distinct(rows, [](const Metrics& m) -> const std::string& { return m.cost_model_description; })
      << "; power " << distinct(rows, [](const Metrics& m) -> const std::string& { return m.power_model_description; })
      << "\n";
  int width = 24;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {}\n", "scenario",
                     width, "gpus", "iter(s)", "tokens/s", "tok/s/gpu", "TFLOP/s", "MFU", "compute", "comm", "exposed",
                     "exp%", "W/GPU", "tokens/J", "memory");
  for (const auto& [name, m] : rows) {
    if (m.oom) {
      out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {:.1f} GB  OUT OF MEMORY\n",
                         name, width, m.gpus, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         m.memory_bytes_per_gpu / kBytesPerGB);
      continue;
    }
    out << fmt::format("{:<{}} {:>6} {:>10.4f} {:>12.0f} {:>9.1f} {:>7.1f} {:>5.1f}% {:>9.4f} {:>8.4f} {:>9.4f} {:>6.1f}% {:>9.0f} "
                       "{:>9.2f} {:.1f} GB\n",
                       name, width, m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu,
                       100 * m.mfu, m.compute_s, m.comm_s, m.exposed_comm_s, 100 * m.exposed_comm_fraction,
                       m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu / kBytesPerGB);
  }
  // How compute was priced (the title names the source): one line when every row agrees, else one
  // per row.
  std::vector<std::string> notes;
  for (const auto& [name, m] : rows) notes.push_back(cost_note(m));
  // Rows priced from one source differ only in their counts: one line of their sums.
  const bool one_source = std::all_of(rows.begin(), rows.end(), [&](const auto& row) {
    return row.second.cost_model_source == rows.front().second.cost_model_source &&
           row.second.cost_model_table == rows.front().second.cost_model_table && !row.second.oom;
  });
  if (std::all_of(notes.begin(), notes.end(), [&](const std::string& n) { return n == notes.front(); })) {
    if (!notes.empty()) out << "# cost model: " << notes.front() << "\n";
  } else if (one_source && rows.front().second.cost_model_source != "roofline" &&
             rows.front().second.cost_model_source != "trace") {
    Metrics total = rows.front().second;
    total.cost_summary = {};
    for (const auto& [name, m] : rows) {
      total.cost_summary.exact_ops += m.cost_summary.exact_ops;
      total.cost_summary.fallback_ops += m.cost_summary.fallback_ops;
      for (const auto& [how, n] : m.cost_summary.fallbacks) total.cost_summary.fallbacks[how] += n;
    }
    out << "# cost model, the " << rows.size() << " rows together: " << cost_note(total) << "\n";
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) out << "# cost model (" << rows[i].first << "): " << notes[i] << "\n";
  }
  for (const std::string& meaning : fallback_meanings(rows)) out << "#   " << meaning << "\n";
  if (const std::string limit = power_limit_note(rows); !limit.empty()) out << "# " << limit << "\n";
  for (const auto& [name, m] : rows) {
    if (!m.oom) continue;
    out << fmt::format("# {} does not fit: {:.1f} GB > {:.1f} GB:", name, m.memory_bytes_per_gpu / kBytesPerGB,
                       m.memory.capacity_bytes / kBytesPerGB);
    for (const auto& [what, bytes] : m.memory.bytes) out << fmt::format(" {} {:.1f} GB;", what, bytes / kBytesPerGB);
    out << "\n";
  }
}

void write_job_metrics(std::ostream& out, const std::vector<JobRow>& rows, Format format, const std::string& title) {
  std::vector<std::pair<std::string, Metrics>> metrics;
  for (const JobRow& row : rows) metrics.emplace_back(row.name, row.metrics);
  auto slowdown = [](const JobRow& row) { return row.metrics.iteration_s / row.alone_iteration_s; };
  if (is_sheet_format(format)) {
    Sheet sheet = metrics_sheet(metrics, title);
    sheet.columns.insert(sheet.columns.end(), {"nodes", "alone_iteration_s", "slowdown"});
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const JobRow& row = rows[i];
      sheet.lines[i].insert(sheet.lines[i].end(), {row.nodes, fmt::format("{:.6f}", row.alone_iteration_s),
                                                   fmt::format("{:.6f}", slowdown(row))});
      sheet.rows[i].update({{"nodes", row.nodes}, {"alone_iteration_s", row.alone_iteration_s}, {"slowdown", slowdown(row)}});
    }
    return write_sheet(out, sheet, format);
  }
  write_metrics(out, metrics, format, title);
  out << "# sharing the cluster: each job's iteration together with the others and alone on the same nodes\n";
  int width = 24;
  for (const JobRow& row : rows) width = std::max(width, static_cast<int>(row.name.size()));
  out << fmt::format("{:<{}} {:>10} {:>10} {:>9}  {}\n", "job", width, "alone(s)", "iter(s)", "slowdown", "nodes");
  for (const JobRow& row : rows) {
    out << fmt::format("{:<{}} {:>10.4f} {:>10.4f} {:>8.3f}x  {}\n", row.name, width, row.alone_iteration_s,
                       row.metrics.iteration_s, slowdown(row), row.nodes);
  }
}

}  // namespace commbound::sim
