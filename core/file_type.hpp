// file_type_at: what a path names, asked without an exception. std::filesystem's plain overloads
// (exists, is_regular_file, is_directory, ...) throw filesystem_error when the system cannot answer:
// a symlink loop (ELOOP), a name longer than the system allows (ENAMETOOLONG), a folder that cannot
// be searched (EACCES). User input reaches those calls (a scenario's trace or kernel table, --out),
// so the answer comes back as a value, and a system error as an Error naming the path.
#pragma once

#include "core/expected.hpp"

#include <filesystem>

namespace commbound {

// The type of the file `path` names, following symlinks: file_type::not_found when nothing is
// there (a missing file is an answer, not an error). Error: "<path>: <the system's reason>", e.g.
// "loop.json: Too many levels of symbolic links".
Expected<std::filesystem::file_type> file_type_at(const std::filesystem::path& path);

// Fails unless `path` names something a reader can open as a file: "<path>: is a folder, not a
// file" (a stream opens a folder and then reads nothing, which a reader would report as an empty
// file), "<path>: cannot be read" when nothing is there, or the system's reason.
Status check_readable_file(const std::filesystem::path& path);

}  // namespace commbound
