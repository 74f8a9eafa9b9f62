#include "sim/workload/internal/pipeline_schedule.hpp"

#include <algorithm>

namespace commbound::sim::internal {

long warmup_units(int stages, int stage, int chunks, int micro_batches, int group) {
  const long units = long{micro_batches} * chunks;
  return std::min(chunks == 1 ? stages - stage - 1 : 2L * (stages - stage - 1) + long{chunks - 1} * group, units);
}

std::vector<ScheduleUnit> one_forward_one_backward(int stages, int stage, int chunks, int micro_batches, int group) {
  // The forward units in order: micro-batches in groups of `group`, each group through chunk 0,
  // then chunk 1, ...; the k-th backward unit takes the k-th forward's micro-batch, chunks reversed.
  std::vector<ScheduleUnit> table;
  table.reserve(static_cast<std::size_t>(micro_batches * chunks));
  for (int first = 0; first < micro_batches; first += group) {
    const int end = first + group >= micro_batches ? micro_batches : first + group;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      for (int mb = first; mb < end; ++mb) table.push_back({false, chunk, mb});
    }
  }
  const int units = static_cast<int>(table.size());
  auto unit = [&](int k, bool backward) {
    ScheduleUnit u = table[static_cast<std::size_t>(k)];
    if (backward) u = {true, chunks - 1 - u.chunk, u.micro_batch};
    return u;
  };
  const int warmup = static_cast<int>(warmup_units(stages, stage, chunks, micro_batches, group));
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
