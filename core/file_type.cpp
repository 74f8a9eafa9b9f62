#include "core/file_type.hpp"

#include <system_error>

namespace commbound {

Expected<std::filesystem::file_type> file_type_at(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  // A missing file (ENOENT, or ENOTDIR for a path through a file) is a known status: not_found.
  if (std::filesystem::status_known(status)) return status.type();
  return Error{path.string() + ": " + ec.message()};
}

Status check_readable_file(const std::filesystem::path& path) {
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (*type == std::filesystem::file_type::directory) return Error{path.string() + ": is a folder, not a file"};
  if (*type == std::filesystem::file_type::not_found) return Error{path.string() + ": cannot be read"};
  return Ok{};
}

}  // namespace commbound
