#include "sim/search/search_report.hpp"

#include "core/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace commbound::sim {
namespace {

// The simulated candidates (ranked, best first) and the best one.
std::vector<const Candidate*> ranked(const SearchResult& r) {
  std::vector<const Candidate*> out;
  for (const Candidate& c : r.candidates) {
    if (c.verdict == Verdict::simulated) out.push_back(&c);
  }
  return out;
}

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / kBytesPerGB); }

// The tail of a validation message (after the last ": "): its reason without file, line and value.
std::string reason_of(const std::string& message) {
  const auto at = message.rfind(": ");
  return at == std::string::npos ? message : message.substr(at + 2);
}

nlohmann::json row_json(const Candidate& c, int rank, const Candidate* best) {
  const LayoutChoice& l = c.layout;
  nlohmann::json j{{"rank", rank > 0 ? nlohmann::json(rank) : nlohmann::json()},
                   {"layout", l.name()},
                   {"tp", l.tp},
                   {"cp", l.cp},
                   {"pp", l.pp},
                   {"virtual_stages", l.virtual_stages},
                   {"dp", l.dp},
                   {"micro_batch", l.micro_batch},
                   {"strategy", to_string(l.strategy)},
                   {"activation_checkpointing", to_string(l.recompute)},
                   {"cp_comm", l.cp_comm ? nlohmann::json(to_string(*l.cp_comm)) : nlohmann::json()},
                   {"tp_overlap", l.tp_overlap ? nlohmann::json(*l.tp_overlap) : nlohmann::json()},
                   {"verdict", to_string(c.verdict)},
                   {"reason", c.reason}};
  if (c.verdict != Verdict::invalid) j["memory_bytes_per_gpu"] = c.memory.total_bytes;
  if (c.verdict == Verdict::simulated || c.verdict == Verdict::pruned) {
    j["bound_iteration_s"] = c.bound.iteration_s;
    if (c.replayed) j["bound_waits_s"] = c.bound.waits_s();
    j["objective_bound"] = c.objective_bound;
  }
  if (c.metrics) {
    const Metrics& m = *c.metrics;
    j.update({{"iteration_s", m.iteration_s},
              {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
              {"mfu", m.mfu},
              {"compute_s", m.compute_s},
              {"exposed_comm_s", m.exposed_comm_s},
              {"exposed_comm_fraction", m.exposed_comm_fraction},
              {"power_w_per_gpu", m.power_w_per_gpu},
              {"tokens_per_joule", m.tokens_per_joule}});
    if (best != nullptr && best != &c) j["lost_to_best_by"] = loss_reason(m, *best->metrics);
  }
  return j;
}

// Every candidate as every sheet format writes it: its layout, verdict and figures (a field it
// lacks left empty), ranked among the simulated; the JSON also carries the objective, the top-k,
// the k-th best and the counts by verdict.
Sheet search_sheet(const SearchResult& result, const SearchReportOptions& o, const Candidate* best) {
  Sheet sheet;
  sheet.title = o.title;
  sheet.columns = {
      "rank", "layout", "tp", "cp", "pp", "virtual_stages", "dp", "micro_batch", "strategy", "activation_checkpointing",
      "cp_comm", "tp_overlap", "verdict", "tokens_per_s_per_gpu", "mfu", "exposed_comm_fraction", "memory_bytes_per_gpu", "power_w_per_gpu",
      "tokens_per_joule", "iteration_s", "compute_s", "exposed_comm_s", "bound_iteration_s", "bound_waits_s",
      "objective_bound", "lost_to_best_by", "reason"};
  int rank = 0;
  for (const Candidate& c : result.candidates) {
    nlohmann::json j = row_json(c, c.verdict == Verdict::simulated ? ++rank : 0, best);
    std::vector<std::string> line;
    for (const std::string& column : sheet.columns) {
      if (!j.contains(column) || j[column].is_null()) {
        line.emplace_back();
      } else if (const nlohmann::json& v = j[column]; v.is_string()) {
        line.push_back(v.get<std::string>());
      } else if (v.is_boolean()) {
        line.emplace_back(v.get<bool>() ? "true" : "false");
      } else if (v.is_number_integer()) {
        line.push_back(std::to_string(v.get<long>()));
      } else {
        line.push_back(fmt::format("{:.6g}", v.get<double>()));
      }
    }
    sheet.lines.push_back(std::move(line));
    sheet.rows.push_back(std::move(j));
  }
  std::map<std::string, int> count;
  for (const Candidate& c : result.candidates) ++count[to_string(c.verdict)];
  sheet.more = {{"objective", o.objective == Objective::tokens_per_s ? "tokens_per_s_per_gpu" : "tokens_per_joule"},
                {"top", o.top},
                {"kth_best", result.kth_best},
                {"counts", count}};
  return sheet;
}

// The summary under the table: counts by verdict and why the non-winners lost.
void write_summary(std::ostream& out, const SearchResult& result, const SearchReportOptions& o, const Candidate* best) {
  std::map<Verdict, int> count;
  for (const Candidate& c : result.candidates) ++count[c.verdict];
  const int fits = count[Verdict::simulated] + count[Verdict::pruned];
  out << fmt::format("# {} layouts: {} invalid, {} out of memory, {} fit; {} simulated, {} pruned by bound\n",
                     result.candidates.size(), count[Verdict::invalid], count[Verdict::out_of_memory], fits,
                     count[Verdict::simulated], count[Verdict::pruned]);
  if (best == nullptr) return;
  out << fmt::format("# why the others lost to #1 ({}):\n", best->layout.name());
  // Simulated losers by reason, each with its worst example.
  std::map<std::string, std::pair<int, const Candidate*>> lost;
  auto worse = [](const std::string& reason, const Metrics& a, const Metrics& b) {
    if (reason == "exposed communication") return a.exposed_comm_fraction > b.exposed_comm_fraction;
    if (reason == "pipeline bubble") {
      return (a.iteration_s - a.compute_s - a.exposed_comm_s) / a.iteration_s >
             (b.iteration_s - b.compute_s - b.exposed_comm_s) / b.iteration_s;
    }
    return a.compute_s > b.compute_s;
  };
  for (const Candidate* c : ranked(result)) {
    if (c == best) continue;
    const std::string why = loss_reason(*c->metrics, *best->metrics);
    auto& [n, worst] = lost[why];
    if (worst == nullptr || worse(why, *c->metrics, *worst->metrics)) worst = c;
    ++n;
  }
  for (const auto& [why, entry] : lost) {
    const Metrics& m = *entry.second->metrics;
    std::string example;
    if (why == "exposed communication") {
      example = fmt::format("{:.1f}% of the iteration exposed", 100 * m.exposed_comm_fraction);
    } else if (why == "pipeline bubble") {
      example = fmt::format("{:.1f}% of the iteration idle", 100 * (m.iteration_s - m.compute_s - m.exposed_comm_s) / m.iteration_s);
    } else {
      example = fmt::format("{:.3f} s of compute vs {:.3f} s", m.compute_s, best->metrics->compute_s);
    }
    out << fmt::format("#   {:<22} {:>6}  worst: {} ({})\n", why, entry.first, entry.second->layout.name(), example);
  }
  if (count[Verdict::pruned] > 0) {
    const Candidate* top_pruned = nullptr;
    for (const Candidate& c : result.candidates) {
      if (c.verdict == Verdict::pruned && (top_pruned == nullptr || c.objective_bound > top_pruned->objective_bound)) top_pruned = &c;
    }
    out << fmt::format("#   {:<22} {:>6}  bound below the top-{} (best bound: {}, {})\n",
                       "pruned by bound", count[Verdict::pruned], o.top, top_pruned->layout.name(), top_pruned->reason);
  }
  if (count[Verdict::out_of_memory] > 0) {
    const Candidate* worst = nullptr;
    for (const Candidate& c : result.candidates) {
      if (c.verdict == Verdict::out_of_memory && (worst == nullptr || c.memory.total_bytes > worst->memory.total_bytes)) worst = &c;
    }
    out << fmt::format("#   {:<22} {:>6}  worst: {} ({})\n", "out of memory", count[Verdict::out_of_memory],
                       worst->layout.name(), worst->reason);
  }
  if (count[Verdict::invalid] > 0) {
    std::map<std::string, std::pair<int, const Candidate*>> reasons;
    for (const Candidate& c : result.candidates) {
      if (c.verdict != Verdict::invalid) continue;
      auto& [n, first] = reasons[reason_of(c.reason)];
      if (first == nullptr) first = &c;
      ++n;
    }
    const auto commonest = std::max_element(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
      return a.second.first < b.second.first;
    });
    out << fmt::format("#   {:<22} {:>6}  commonest ({}x): {}\n", "invalid", count[Verdict::invalid],
                       commonest->second.first, commonest->second.second->reason);
  }
}

}  // namespace

void write_search(std::ostream& out, const SearchResult& result, const SearchReportOptions& o) {
  const std::vector<const Candidate*> top = ranked(result);
  const Candidate* best = top.empty() ? nullptr : top.front();
  if (is_sheet_format(o.format)) return write_sheet(out, search_sheet(result, o, best), o.format);
  out << "# " << o.title << "\n";
  int width = 8;
  const std::size_t shown = std::min(top.size(), static_cast<std::size_t>(std::max(0, o.top)));
  for (std::size_t i = 0; i < shown; ++i) width = std::max(width, static_cast<int>(top[i]->layout.name().size()));
  out << fmt::format("{:>4}  {:<{}} {:>10} {:>6} {:>8} {:>11} {:>6} {:>8}\n", "rank", "layout", width, "tok/s/GPU", "MFU",
                     "exposed", "memory/GPU", "W/GPU", "tokens/J");
  for (std::size_t i = 0; i < shown; ++i) {
    const Metrics& m = *top[i]->metrics;
    out << fmt::format("{:>4}  {:<{}} {:>10.1f} {:>5.1f}% {:>7.1f}% {:>11} {:>6.0f} {:>8.2f}\n", i + 1, top[i]->layout.name(),
                       width, m.tokens_per_s_per_gpu, 100 * m.mfu, 100 * m.exposed_comm_fraction, gb(m.memory_bytes_per_gpu),
                       m.power_w_per_gpu, m.tokens_per_joule);
  }
  write_summary(out, result, o, best);
  if (best != nullptr) out << "# cost model: " << best->metrics->cost_model_description << "\n";
}

}  // namespace commbound::sim
