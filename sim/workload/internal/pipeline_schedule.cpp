#include "sim/workload/internal/pipeline_schedule.hpp"

#include <algorithm>

namespace commbound::sim::internal {

std::vector<ScheduleUnit> one_forward_one_backward(int stages, int stage, int chunks, int micro_batches) {
  const int units = micro_batches * chunks;
  // The k-th forward (or backward) unit of the stage.
  auto unit = [&](int k, bool backward) {
    const int chunk = k % (stages * chunks) / stages;
    const int interleaved_mb = k / (stages * chunks) * stages + k % stages;
    return ScheduleUnit{backward, backward ? chunks - 1 - chunk : chunk, chunks == 1 ? k : interleaved_mb};
  };
  const int warmup =
      std::min(chunks == 1 ? stages - stage - 1 : 2 * (stages - stage - 1) + (chunks - 1) * stages, units);
  std::vector<ScheduleUnit> order;
  order.reserve(static_cast<std::size_t>(2 * units));
  for (int k = 0; k < warmup; ++k) order.push_back(unit(k, false));
  for (int k = 0; k < units - warmup; ++k) {
    order.push_back(unit(warmup + k, false));
    order.push_back(unit(k, true));
  }
  for (int k = units - warmup; k < units; ++k) order.push_back(unit(k, true));
  return order;
}

}  // namespace commbound::sim::internal
