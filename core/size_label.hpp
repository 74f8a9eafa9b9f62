// size_label: a byte count as people read it, in binary units as nccl-tests' sizes are.
#pragma once

#include <string>

namespace commbound {

// "64 MiB", "1 GiB", "1.50 GiB", "210.06 KiB": whole numbers bare, the rest to two decimals.
std::string size_label(double bytes);

}  // namespace commbound
