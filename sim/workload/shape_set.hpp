// ShapeSet: the distinct kernel shapes a set of programs runs, written as a calibration table
// without timings: the input of `commbound-calibrate --shapes` (`commbound shapes`), through the
// calibration room's one writer (calibration::KernelTable::write).
//
// The file holds only rows, with exactly the keys the calibration tool reads:
//   [[gemm]] m n k layout; [[attention]] direction batch heads kv_heads seq head_dim causal;
//   [[memory_bound]] op tokens width.
// Rows are deduplicated and sorted (GEMMs by m, n, k, layout; attention by direction, then
// batch, heads, kv_heads, seq, head_dim, causal; memory-bound by op name, then tokens, width), so
// the file is stable across runs.
#pragma once

#include "model/kernel_shape.hpp"
#include "sim/workload/workload.hpp"

#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace commbound::sim {

class ShapeSet {
public:
  // Adds every kernel shape of `program`'s compute ops (not the synchronisation points).
  void add(const Program& program);
  void add(const model::KernelShape& shape);

  const std::set<model::GemmShape>& gemms() const { return gemms_; }
  const std::set<model::AttentionShape>& attentions() const { return attentions_; }
  const std::set<model::MemoryBoundShape>& memory_bounds() const { return memory_bounds_; }
  std::size_t size() const { return gemms_.size() + attentions_.size() + memory_bounds_.size(); }

  // `comments` go first, each line prefixed with "# ".
  void write(std::ostream& out, const std::vector<std::string>& comments) const;

private:
  std::set<model::GemmShape> gemms_;
  std::set<model::AttentionShape> attentions_;
  std::set<model::MemoryBoundShape> memory_bounds_;
};

}  // namespace commbound::sim
