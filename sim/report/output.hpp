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

// The largest buffer a size list takes, 1 TiB: no GPU's memory holds one (the largest hold a few
// hundred GB), so a larger size is a typo, and a busbw computed for it would be fiction.
inline constexpr double kMaxListBytes = 1099511627776.0;

// What a list holds. Sizes: bytes, 0 to kMaxListBytes, with binary suffixes. Node counts: integers
// from 1 to network::kMaxNodes (the most nodes a scenario's cluster has).
enum class ListKind { sizes_bytes, node_counts };

// Parses a list of `kind`: "1024", "64K", "16M", "1G" (binary multiples, as nccl-tests; sizes
// only), comma lists, and "A:B" for A, 2A, 4A, ... up to B. Errors name `flag` and the item:
// not a number, out of its kind's range (saying the bound and why), a range with B < A.
Expected<std::vector<double>> parse_list(const std::string& flag, const std::string& text, ListKind kind);

}  // namespace commbound::sim
