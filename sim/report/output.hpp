// Output: where results go. Files are written whole or not at all (a temporary beside the target,
// renamed into place), and an existing file is never replaced unless the user said --force.
#pragma once

#include "core/expected.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// Fails unless a file can be written at `path` as asked ("-" and empty, standard output, always
// pass): the name holds no control character and names a file, not a folder ("out/"); its folder
// exists and is writable; nothing is there yet, or, with `force`, a regular file is. A folder, a
// symbolic link, a FIFO, a device or a socket is never replaced. Check before long work, so that a
// refusal costs nothing. Errors name the path and say which of these failed.
Status check_writable(const std::string& path, bool force);

// Fails unless `dir` can hold a command's outputs: a writable folder, or a missing one whose nearest
// existing ancestor is a writable folder (the command creates the rest). Errors name `dir`.
Status check_folder_writable(const std::string& dir);

// Fails unless `name` is a plain file name, as asked where a command makes a path from a name
// (fit-fabric --name): not empty, no '/', not hidden (no leading '.', so neither "." nor ".."), no
// control character. Errors name `flag` and the value.
Status check_plain_name(const std::string& flag, const std::string& name);

// A file a command reads or writes, with the argument that named it ("--out", "scenario").
struct NamedPath {
  std::string flag;
  std::string path;
};

// Fails when an output is the same file as another output or as an input (one written over the
// other, or over what is being read). Paths are compared after resolving "..", "." and symbolic
// links of what exists; "-" and empty are never the same as anything.
Status check_distinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

// What a command checks of its outputs before any work: check_writable for each (its error
// prefixed with the flag: "--out x/y.csv: x: no such folder"), then check_distinct.
Status check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs, bool force);

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
