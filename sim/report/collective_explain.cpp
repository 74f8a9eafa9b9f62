#include "sim/report/collective_explain.hpp"

#include "core/size_label.hpp"
#include "core/units.hpp"
#include "network/tuner_plugin.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstddef>

namespace commbound::sim {
namespace {

using network::Protocol;

constexpr Protocol kProtocols[] = {Protocol::ll, Protocol::ll128, Protocol::simple};

std::string choice_label(const network::CollectiveChoice& c, network::CollectiveOp op) {
  return fmt::format("{}/{}", network::algorithm_label(op, c.algorithm), network::to_string(c.protocol));
}

bool same(const network::CollectiveChoice& a, const network::CollectiveChoice& b) {
  return a.algorithm == b.algorithm && a.protocol == b.protocol;
}

// `plugin`: the tuner plugin's name when its region chose the call, else empty.
void write_tuner(std::ostream& out, const network::SweepRow& row, const std::vector<TunerEstimate>& estimates,
                 const std::string& plugin) {
  out << "NCCL's tuner, its own estimates (latency + bytes / its bandwidth; the least wins):\n";
  const auto least = std::min_element(estimates.begin(), estimates.end(), [](const auto& a, const auto& b) {
    if (a.unsupported.empty() != b.unsupported.empty()) return a.unsupported.empty();
    return a.time_s < b.time_s;
  });
  std::vector<std::string> cannot;
  for (const TunerEstimate& e : estimates) {
    if (!e.unsupported.empty()) {
      if (e.choice.protocol == Protocol::simple) {
        cannot.push_back(fmt::format("{} ({})", network::to_string(e.choice.algorithm), e.unsupported));
      }
      continue;
    }
    std::string mark;
    if (same(e.choice, row.result.choice)) {
      mark = !plugin.empty() ? "  <- runs (" + plugin + "'s region)"
                             : (&e == &*least ? "  <- runs (the tuner's pick)" : "  <- runs (forced)");
    }
    out << fmt::format("  {:<16} {:>12.1f} us latency {:>12.1f} us in all{}\n", choice_label(e.choice, row.op),
                       e.latency_s * kUsPerS, e.time_s * kUsPerS, mark);
  }
  if (!cannot.empty()) out << "  cannot run it: " << fmt::format("{}", fmt::join(cannot, "; ")) << "\n";
}

void write_terms(std::ostream& out, const network::SweepRow& row) {
  const network::CollectiveResult& r = row.result;
  out << fmt::format("{} as simulated, term by term:\n", choice_label(r.choice, row.op));
  std::size_t width = 4;
  for (const network::CostTerm& t : r.terms) width = std::max(width, t.what.size());
  out << fmt::format("  {:<{}} {:>7} {:>10} {:>11} {:>7}\n", "term", width, "count", "each(us)", "time(us)", "share");
  for (const network::CostTerm& t : r.terms) {
    const std::string count = t.count > 0 ? fmt::format("{:g}", t.count) : "";
    const std::string each = t.count > 0 ? fmt::format("{:.2f}", t.each_s * kUsPerS) : "";
    out << fmt::format("  {:<{}} {:>7} {:>10} {:>11.1f} {:>6.1f}%\n", t.what, width, count, each, t.seconds * kUsPerS,
                       100 * t.seconds / r.time_s);
  }
  out << fmt::format("  {:<{}} {:>7} {:>10} {:>11.1f} {:>6.1f}%\n", "total", width, "", "", r.time_s * kUsPerS, 100.0);
  if (const std::string limit = limiting_term(r); !limit.empty()) out << "limited by: " << limit << "\n";
  write_loads(out, r, "");
}

}  // namespace

void write_loads(std::ostream& out, const network::CollectiveResult& result, const std::string& indent) {
  if (result.loads.empty()) return;
  out << indent << "the busiest links, each at its rate alone (the bytes' term is at least the longest):\n";
  std::size_t width = 4;
  for (const network::CostTerm& t : result.loads) width = std::max(width, t.what.size());
  for (const network::CostTerm& t : result.loads) {
    out << fmt::format("{}  {:<{}} {:>11.1f} us\n", indent, t.what, width, t.seconds * kUsPerS);
  }
}

std::string limiting_term(const network::CollectiveResult& result) {
  const network::CostTerm* limit = nullptr;
  for (const network::CostTerm& t : result.terms) {
    if (t.seconds > 0 && t.what.rfind("waiting for FIFO slots", 0) == 0) {
      return "the FIFO window (a connection's slots come back no faster), not by latency + bytes";
    }
    if (limit == nullptr || t.seconds > limit->seconds) limit = &t;
  }
  return limit != nullptr ? limit->what : "";
}

std::vector<TunerEstimate> tuner_estimates(const network::NcclTuner& tuner, const network::CallShape& shape) {
  std::vector<TunerEstimate> estimates;
  for (network::Algorithm a : network::kAllAlgorithms) {
    for (Protocol p : kProtocols) {
      TunerEstimate e{{a, p}, tuner.unsupported(shape, {a, p}), 0, 0};
      if (e.unsupported.empty()) {
        const auto t = tuner.predict_s(shape, e.choice);
        if (!t) continue;
        e.time_s = *t;
        e.latency_s = tuner.predict_latency_s(shape, e.choice);
      }
      estimates.push_back(std::move(e));
    }
  }
  return estimates;
}

void write_collective_explanation(std::ostream& out, const std::vector<network::SweepRow>& rows,
                                  const network::NcclTuner& tuner, const std::string& title) {
  out << "# " << title << "\n";
  for (const network::SweepRow& row : rows) {
    const network::CollectiveResult& r = row.result;
    out << fmt::format("\n## {} {} on {} node(s), {} ranks: {}, {:.1f} us, busbw {:.1f} GB/s\n",
                       network::to_string(row.op), size_label(row.size_bytes), row.nodes, row.ranks,
                       choice_label(r.choice, row.op), r.time_s * kUsPerS, row.bus_bw_bytes_per_s / kBytesPerGB);
    const bool tuned = row.op != network::CollectiveOp::send_recv && row.op != network::CollectiveOp::all_to_all;
    if (tuned) {
      const network::CallShape shape{row.op, row.ranks, row.nodes, row.size_bytes};
      const auto picked = tuner.plugin_choice(shape);
      const std::string plugin =
          picked && same(*picked, r.choice) ? tuner.nccl().tuner_plugin->name : std::string();
      write_tuner(out, row, tuner_estimates(tuner, shape), plugin);
    }
    write_terms(out, row);
  }
}

}  // namespace commbound::sim
