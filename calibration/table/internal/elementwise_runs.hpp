// The runs of a table's PyTorch elementwise rows that time one op on one path: what pricing
// interpolates between and what deriving scales together.
#pragma once

#include "calibration/table/kernel_table.hpp"

#include <cstddef>
#include <utility>
#include <vector>

namespace commbound::calibration::internal {

// The runs of `rows` (sorted by ElementwiseRow::key) that time one op on one path, cold or warm:
// [first, last), by elements.
inline std::vector<std::pair<std::size_t, std::size_t>> op_runs(const std::vector<ElementwiseRow>& rows) {
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].path == rows[i].path && rows[j].op == rows[i].op && rows[j].warm == rows[i].warm) {
      ++j;
    }
    runs.emplace_back(i, j);
    i = j;
  }
  return runs;
}

}  // namespace commbound::calibration::internal
