// write_file_atomically: a whole file or none. Tools that write results (a calibration table, an
// nccl-tests log) write a temporary file beside the target and rename it into place, so that an
// error or a kill part-way never leaves a truncated file that a later run would read as data.
#pragma once

#include "calibration/base/expected.hpp"

#include <filesystem>
#include <string>

namespace commbound {

// Writes `text` to `path` through a temporary file in the same folder (replacing `path` if it
// exists: whether that is allowed is the caller's decision). Errors name the path; the temporary
// file is removed on failure.
Status write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace commbound
