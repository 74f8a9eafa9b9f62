// Output: where results go. Files are written whole or not at all (a temporary beside the target,
// renamed into place), and an existing file is never replaced unless the user said --force.
#pragma once

#include "calibration/base/expected.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// Fails when `path` names an existing file and `force` is false (check before long work, so a
// refusal costs nothing). "-" and empty (standard output) always pass.
Status check_writable(const std::string& path, bool force);

// Writes `write`'s output to `path` ("-" or empty: standard output), refusing as check_writable.
Status write_output(const std::string& path, bool force, const std::function<void(std::ostream&)>& write);

// Parses sizes: "1024", "64K", "16M", "1G" (binary multiples, as nccl-tests), comma lists, and
// "A:B" for A, 2A, 4A, ... up to B. Suffixes only when `allow_suffix` (sizes, not node counts).
Expected<std::vector<double>> parse_list(const std::string& flag, const std::string& text, bool allow_suffix);

}  // namespace commbound::sim
