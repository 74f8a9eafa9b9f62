// write_file_atomically: a whole file or none. Tools that write results (a calibration table, an
// nccl-tests log, a report, a figure) write a temporary file beside the target and rename it into
// place, so that an error or a kill part-way never leaves a truncated file that a later run would
// read as data.
#pragma once

#include "core/expected.hpp"

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace commbound {

// Makes `path` through a temporary file in the same folder: `produce(tmp)` creates the temporary
// (itself, or through another program such as gnuplot); when it succeeds the temporary replaces
// `path` (whether replacing is allowed is the caller's decision), else it is removed. The
// temporary, ".<stem>.tmp<pid><extension>", keeps the extension for tools that pick a format by it.
Status replace_atomically(const std::filesystem::path& path,
                          const std::function<Status(const std::filesystem::path& tmp)>& produce);

// Writes `write`'s output, or `text`, to `path` the same way. Errors name the path.
Status write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
Status write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace commbound
