// The simulator's name for a GPU's calibration table: the calibration room's KernelTable
// (calibration/table/kernel_table.hpp: its reader, writer, pricing rule and derivation), kept for
// the command line (sim/cli/) and sim/scenario.*, which spell it sim::GpuTable.
#pragma once

#include "calibration/table/kernel_table.hpp"

namespace commbound::sim {

using GpuTable = calibration::KernelTable;

}  // namespace commbound::sim
