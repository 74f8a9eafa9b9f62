#include "core/nccl_tests_text.hpp"

#include "core/strprintf.hpp"
#include "core/units.hpp"

namespace commbound {
namespace {

constexpr double kGBPerBytes = 1e-9;  // nccl-tests' GB/s: 1e9 bytes per second

// `line` without trailing blanks, plus a newline.
std::string trimmed_line(std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

}  // namespace

std::string nccl_tests_fixed_width(double value, int width) {
  for (const char* f : {"%*.2f", "%*.1f", "%*.0f"}) {
    std::string s = strprintf(f, width, value);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return strprintf(width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

std::string nccl_tests_column_heads() {
  const char* heads = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s";
  std::string out = trimmed_line(
      strprintf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place", "", "", "", "", ""));
  out += trimmed_line(strprintf(heads, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                                "algbw", "busbw", "#wrong"));
  out += trimmed_line(strprintf(heads, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                                "(GB/s)", ""));
  return out;
}

std::string nccl_tests_row(const NcclTestsRow& row) {
  std::string out = strprintf("%12zu  %12zu  %8s  %6s  %6d", row.size_bytes, row.count, row.type, row.redop, -1);
  for (const NcclTestsTiming* t : {&row.out_of_place, &row.in_place}) {
    out += strprintf("  %7s  %6s  %6s", nccl_tests_fixed_width(t->time_s * kUsPerS, 7).c_str(),
                     nccl_tests_fixed_width(t->alg_bw_bytes_per_s * kGBPerBytes, 6).c_str(),
                     nccl_tests_fixed_width(t->bus_bw_bytes_per_s * kGBPerBytes, 6).c_str());
    out += t->wrong < 0 ? std::string("    N/A") : strprintf("  %6g", static_cast<double>(t->wrong));
  }
  return out + "\n";
}

std::string nccl_tests_footer(const std::vector<NcclTestsRow>& rows) {
  int failed = 0;
  double bus_bw_sum = 0;
  for (const NcclTestsRow& r : rows) {
    for (const NcclTestsTiming* t : {&r.out_of_place, &r.in_place}) {
      failed += t->wrong > 0 ? 1 : 0;
      bus_bw_sum += t->bus_bw_bytes_per_s;
    }
  }
  const double mean_GBps = rows.empty() ? 0 : bus_bw_sum / (2.0 * static_cast<double>(rows.size())) * kGBPerBytes;
  std::string out = strprintf("# %-20s : %d %s\n", "Out of bounds values", failed, failed > 0 ? "FAILED" : "OK");
  out += strprintf("# %-20s : %g\n", "Avg bus bandwidth", mean_GBps);
  return out + "#\n";
}

}  // namespace commbound
