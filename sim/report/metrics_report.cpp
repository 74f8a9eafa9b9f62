#include "sim/report/metrics_report.hpp"

#include "sim/report/csv_table.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace commbound::sim {
namespace {

std::string cost_csv(const Metrics& m) {
  return "," + csv_field(m.cost_model_source) + "," + csv_field(m.cost_model_table) + "," +
         std::to_string(m.cost_summary.exact_ops) + "," + std::to_string(m.cost_summary.fallback_ops);
}

// "1200 compute ops exact from the table, 90 by fallback (gemm_nearest 60, memory_bound_roofline 30)".
std::string cost_note(const Metrics& m) {
  const CostSummary& c = m.cost_summary;
  if (m.cost_model_source == "roofline") return "every compute op by the datasheet roofline (no kernel table)";
  if (m.cost_model_source == "trace") return "every compute op at its duration in the replayed trace";
  if (m.oom && c.exact_ops == 0 && c.fallback_ops == 0) {
    return "no op priced: the layout does not fit, and its program, past the size limits (docs/limits.md), was not built";
  }
  std::string note = std::to_string(c.exact_ops) + " compute ops exact from " + m.cost_model_table + ", " +
                     std::to_string(c.fallback_ops) + " by fallback";
  std::string kinds;
  for (const auto& [how, n] : c.fallbacks) kinds += (kinds.empty() ? "" : ", ") + how + " " + std::to_string(n);
  return note + (kinds.empty() ? "" : " (" + kinds + ")");
}

}  // namespace

void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& format,
                   const std::string& title) {
  if (format == "csv") {
    out << "scenario,gpus,iteration_s,tokens_per_s,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,compute_s,comm_s,"
           "exposed_comm_s,exposed_comm_fraction,power_w_per_gpu,tokens_per_joule,memory_bytes_per_gpu,oom,"
           "cost_model_source,cost_model_table,cost_model_exact_ops,cost_model_fallback_ops\n";
    for (const auto& [name, m] : rows) {
      if (m.oom) {  // not simulated: no timing to report
        out << fmt::format("{},{},,,,,,,,,,,,{:.0f},1", name, m.gpus, m.memory_bytes_per_gpu) << cost_csv(m) << "\n";
        continue;
      }
      out << fmt::format("{},{},{:.6f},{:.1f},{:.2f},{:.2f},{:.4f},{:.6f},{:.6f},{:.6f},{:.4f},{:.1f},{:.4f},{:.0f},{}", name,
                         m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu, m.mfu,
                         m.compute_s, m.comm_s, m.exposed_comm_s, m.exposed_comm_fraction, m.power_w_per_gpu,
                         m.tokens_per_joule, m.memory_bytes_per_gpu, m.oom ? 1 : 0)
          << cost_csv(m) << "\n";
    }
    return;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& [name, m] : rows) {
      nlohmann::json mem = nlohmann::json::object();
      for (const auto& [what, bytes] : m.memory.bytes) mem[what] = bytes;
      nlohmann::json fallbacks = nlohmann::json::object();
      for (const auto& [how, n] : m.cost_summary.fallbacks) fallbacks[how] = n;
      const nlohmann::json cost{{"cost_model_source", m.cost_model_source},
                                {"cost_model_table", m.cost_model_table},
                                {"cost_model_description", m.cost_model_description},
                                {"cost_model_exact_ops", m.cost_summary.exact_ops},
                                {"cost_model_fallback_ops", m.cost_summary.fallback_ops},
                                {"cost_model_fallbacks", fallbacks},
                                {"power_model", m.power_model_description}};
      if (m.oom) {  // not simulated: timing fields are null
        nlohmann::json row{{"scenario", name}, {"gpus", m.gpus}, {"oom", true}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                           {"memory_breakdown_bytes", mem}};
        row.update(cost);
        arr.push_back(row);
        continue;
      }
      arr.push_back({{"scenario", name}, {"gpus", m.gpus}, {"iteration_s", m.iteration_s},
                     {"tokens_per_s", m.tokens_per_s}, {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
                     {"model_tflops_per_gpu", m.model_tflops_per_gpu}, {"mfu", m.mfu}, {"compute_s", m.compute_s},
                     {"comm_s", m.comm_s}, {"exposed_comm_s", m.exposed_comm_s},
                     {"exposed_comm_fraction", m.exposed_comm_fraction}, {"power_w_per_gpu", m.power_w_per_gpu},
                     {"tokens_per_joule", m.tokens_per_joule}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                     {"oom", m.oom}, {"memory_breakdown_bytes", mem}});
      arr.back().update(cost);
    }
    out << nlohmann::json{{"title", title}, {"rows", arr}}.dump(2) << "\n";
    return;
  }
  out << "# " << title << "\n";
  int width = 24;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {}\n", "scenario",
                     width, "gpus", "iter(s)", "tokens/s", "tok/s/gpu", "TFLOP/s", "MFU", "compute", "comm", "exposed",
                     "exp%", "W/GPU", "tokens/J", "memory");
  for (const auto& [name, m] : rows) {
    if (m.oom) {
      out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {:.1f} GB  OUT OF MEMORY\n",
                         name, width, m.gpus, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         m.memory_bytes_per_gpu / 1e9);
      continue;
    }
    out << fmt::format("{:<{}} {:>6} {:>10.4f} {:>12.0f} {:>9.1f} {:>7.1f} {:>5.1f}% {:>9.4f} {:>8.4f} {:>9.4f} {:>6.1f}% {:>9.0f} "
                       "{:>9.2f} {:.1f} GB\n",
                       name, width, m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu,
                       100 * m.mfu, m.compute_s, m.comm_s, m.exposed_comm_s, 100 * m.exposed_comm_fraction,
                       m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu / 1e9);
  }
  // How compute was priced (the title names the source): one line when every row agrees, else one
  // per row.
  std::vector<std::string> notes;
  for (const auto& [name, m] : rows) notes.push_back(cost_note(m));
  if (std::all_of(notes.begin(), notes.end(), [&](const std::string& n) { return n == notes.front(); })) {
    if (!notes.empty()) out << "# cost model: " << notes.front() << "\n";
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) out << "# cost model (" << rows[i].first << "): " << notes[i] << "\n";
  }
  for (const auto& [name, m] : rows) {
    if (!m.oom) continue;
    out << fmt::format("# {} does not fit: {:.1f} GB > {:.1f} GB:", name, m.memory_bytes_per_gpu / 1e9,
                       m.memory.capacity_bytes / 1e9);
    for (const auto& [what, bytes] : m.memory.bytes) out << fmt::format(" {} {:.1f} GB;", what, bytes / 1e9);
    out << "\n";
  }
}

}  // namespace commbound::sim
