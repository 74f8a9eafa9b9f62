#include "sim/workload/shape_set.hpp"

#include "calibration/table/kernel_table.hpp"

namespace commbound::sim {

void ShapeSet::add(const Program& program) {
  for (const Op& op : program.ops) add(op.kernel);
}

void ShapeSet::add(const model::KernelShape& shape) {
  if (const auto* g = std::get_if<model::GemmShape>(&shape)) {
    // A table times bf16 GEMMs only (an FP8 product is priced from its bf16 row by the table's FP8
    // ratio), so an FP8 product asks for its bf16 twin's row, and the two are one row.
    model::GemmShape bf16 = *g;
    bf16.precision = model::Precision::bf16;
    bf16.group.clear();  // a grouped product is priced from its mean product's row
    gemms_.insert(bf16);
  }
  if (const auto* a = std::get_if<model::AttentionShape>(&shape)) attentions_.insert(*a);
  if (const auto* m = std::get_if<model::MemoryBoundShape>(&shape)) memory_bounds_.insert(*m);
}

void ShapeSet::write(std::ostream& out, const std::vector<std::string>& comments) const {
  calibration::KernelTable rows;
  for (const auto& g : gemms_) rows.add(calibration::GemmRow{g, {}});
  for (const auto& a : attentions_) rows.add(calibration::AttentionRow{"commbound", a, {}});
  for (const auto& m : memory_bounds_) rows.add(calibration::MemoryBoundRow{m, 0, {}});
  rows.write(out, comments);
}

}  // namespace commbound::sim
