#include "sim/report/profile_report.hpp"

#include "core/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace commbound::sim {
namespace {

constexpr double kMBPerByte = 1e-6;
constexpr double kGFLOPPerFLOP = 1e-9;

// The parts the table lists kernel by kernel: a dense and an MoE layer's, each forward, backward
// and recompute.
bool is_layer_part(const std::string& part) {
  for (const char* layer : {"layer.", "moe_layer."}) {
    for (const char* pass : {"forward", "backward", "recompute"}) {
      if (part == std::string(layer) + pass) return true;
    }
  }
  return false;
}

void write_table(std::ostream& out, const ComputeProfile& p, const std::string& title) {
  out << title << "\n\n";
  // The kernel and shape columns as wide as their longest entry: the rows stay aligned.
  std::size_t part_width = 4, kernel_width = 6, shape_width = 5, parts_width = 12;
  for (const ProfiledKernel& k : p.kernels) {
    if (!is_layer_part(k.part)) continue;
    part_width = std::max(part_width, k.part.size());
    kernel_width = std::max(kernel_width, k.name.size());
    shape_width = std::max(shape_width, model::describe(k.shape).size());
  }
  for (const ProfiledPart& part : p.parts) parts_width = std::max(parts_width, part.name.size());
  out << fmt::format("{:<{}} {:<{}} {:<{}} {:>9} {:>8} {:>9} {:>8} {:>9}  {}\n", "part", part_width, "kernel",
                     kernel_width, "shape", shape_width, "MB", "GFLOP", "gpu us", "host us", "end us", "priced");
  for (const ProfiledKernel& k : p.kernels) {
    if (!is_layer_part(k.part)) continue;
    out << fmt::format("{:<{}} {:<{}} {:<{}} {:>9.2f} {:>8.2f} {:>9.1f} {:>8.1f} {:>9.1f}  {}\n", k.part, part_width,
                       k.name, kernel_width, model::describe(k.shape), shape_width, k.bytes * kMBPerByte,
                       k.flops * kGFLOPPerFLOP, k.gpu_s * kUsPerS, k.host_s * kUsPerS, k.end_s * kUsPerS,
                       calibration::to_string(k.match));
  }
  out << "\n"
      << fmt::format("{:<{}} {:>8} {:>10} {:>10} {:>10} {:>12}  {}\n", "part (alone)", parts_width, "kernels",
                     "gpu ms", "host ms", "time ms", "power limit", "bound by");
  for (const ProfiledPart& part : p.parts) {
    out << fmt::format("{:<{}} {:>8} {:>10.3f} {:>10.3f} {:>10.3f} {:>11.3f}x  {}\n", part.name, parts_width, part.kernels,
                       part.gpu_s * kMsPerS, part.host_s * kMsPerS, part.time_s * kMsPerS, part.limit_slowdown,
                       part.host_bound() ? "host" : "gpu");
  }
}

// The profile as every sheet format writes it: a row per kernel (its part, shape, bytes, FLOPs and
// times), and in JSON each part alone too.
Sheet profile_sheet(const ComputeProfile& p, const std::string& title) {
  Sheet sheet;
  std::string one_line = title.rfind("# ", 0) == 0 ? title.substr(2) : title;  // the table's header lines as one
  for (std::size_t at = one_line.find("\n# "); at != std::string::npos; at = one_line.find("\n# ")) {
    one_line.replace(at, 3, "; ");
  }
  sheet.title = one_line;
  sheet.columns = {"part", "kernel", "shape", "bytes", "flops", "gpu_us", "host_us", "issue_us", "start_us", "end_us", "priced"};
  sheet.rows_key = "kernels";
  for (const ProfiledKernel& k : p.kernels) {
    sheet.lines.push_back({k.part, k.name, model::describe(k.shape), fmt::format("{:.0f}", k.bytes),
                           fmt::format("{:.0f}", k.flops), fmt::format("{:.3f}", k.gpu_s * kUsPerS),
                           fmt::format("{:.3f}", k.host_s * kUsPerS), fmt::format("{:.3f}", k.issue_s * kUsPerS),
                           fmt::format("{:.3f}", k.start_s * kUsPerS), fmt::format("{:.3f}", k.end_s * kUsPerS),
                           calibration::to_string(k.match)});
    sheet.rows.push_back({{"part", k.part}, {"kernel", k.name}, {"shape", model::describe(k.shape)},
                          {"bytes", k.bytes}, {"flops", k.flops}, {"gpu_us", k.gpu_s * kUsPerS},
                          {"host_us", k.host_s * kUsPerS}, {"issue_us", k.issue_s * kUsPerS},
                          {"start_us", k.start_s * kUsPerS}, {"end_us", k.end_s * kUsPerS},
                          {"priced", calibration::to_string(k.match)}});
  }
  nlohmann::json parts = nlohmann::json::array();
  for (const ProfiledPart& part : p.parts) {
    parts.push_back({{"part", part.name}, {"kernels", part.kernels}, {"gpu_ms", part.gpu_s * kMsPerS},
                     {"host_ms", part.host_s * kMsPerS}, {"time_ms", part.time_s * kMsPerS},
                     {"power_limit_slowdown", part.limit_slowdown}, {"bound_by", part.host_bound() ? "host" : "gpu"}});
  }
  sheet.more["parts"] = parts;
  return sheet;
}

}  // namespace

void write_profile(std::ostream& out, const ComputeProfile& profile, Format format,
                   const std::string& title) {
  if (is_sheet_format(format)) return write_sheet(out, profile_sheet(profile, title), format);
  write_table(out, profile, title);
}

}  // namespace commbound::sim
