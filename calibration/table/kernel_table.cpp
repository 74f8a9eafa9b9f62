// A kernel table's rows and what it says of itself; reading and writing it are in
// kernel_table_io.cpp, pricing in kernel_table_price.cpp, deriving in kernel_table_derive.cpp.
#include "calibration/table/kernel_table.hpp"

#include "core/check.hpp"

#include <algorithm>

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;

double TablePower::limit_slowdown(double share) const {
  if (limit_gemm_share.empty()) return 1;
  share = std::clamp(share, 0.0, 1.0);
  double x0 = 0, y0 = 1;  // no compute-bound work: nothing to slow down
  for (std::size_t i = 0; i < limit_gemm_share.size(); ++i) {
    const double x1 = limit_gemm_share[i], y1 = limit_gemm_slowdown[i];
    if (share <= x1) return y0 + (y1 - y0) * (share - x0) / (x1 - x0);
    x0 = x1;
    y0 = y1;
  }
  return y0;
}

const char* to_string(Match m) {
  switch (m) {
    case Match::exact: return "exact";
    case Match::nearest: return "nearest";
    case Match::roofline: return "roofline";
  }
  return "?";
}

bool KernelTable::add(GemmRow row) {
  if (!gemm_keys_.insert(row.shape).second) return false;
  gemms_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(AttentionRow row) {
  if (!attention_keys_.insert({row.implementation, row.shape}).second) return false;
  attentions_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(MemoryBoundRow row) {
  if (!memory_bound_keys_.insert(row.shape).second) return false;
  memory_bounds_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(ElementwiseRow row) {
  const auto at = std::lower_bound(elementwise_rows_.begin(), elementwise_rows_.end(), row,
                                   [](const ElementwiseRow& a, const ElementwiseRow& b) { return a.key() < b.key(); });
  if (at != elementwise_rows_.end() && at->key() == row.key()) return false;
  elementwise_rows_.insert(at, std::move(row));
  return true;
}

void KernelTable::add_rows(const KernelTable& other) {
  for (const GemmRow& r : other.gemms_) add(r);
  for (const AttentionRow& r : other.attentions_) add(r);
  for (const MemoryBoundRow& r : other.memory_bounds_) add(r);
  for (const Fp8GemmRow& r : other.fp8_gemms_) add(r);
  for (const ElementwiseRow& r : other.elementwise_rows_) add(r);
}

const TableProvenance& KernelTable::provenance() const {
  COMMBOUND_CHECK(provenance_.has_value(), "provenance() of a table without [provenance]");
  return *provenance_;
}

const TableDevice& KernelTable::device() const {
  COMMBOUND_CHECK(device_.has_value(), "device() of a table without [device]");
  return *device_;
}

std::string KernelTable::describe() const {
  const TableProvenance& p = provenance();
  if (p.derived) return "derived: " + display_path_ + " (" + p.gpu + ", derived from " + p.derived_from + ")";
  return "measured: " + display_path_ + " (" + p.gpu + ", " + p.date + ", commit " + p.tool_commit + ")";
}

bool KernelTable::has_attention(const std::string& implementation) const {
  return std::any_of(attentions_.begin(), attentions_.end(),
                     [&](const AttentionRow& r) { return r.implementation == implementation; });
}
}  // namespace commbound::calibration
