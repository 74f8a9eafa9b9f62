#include "calibration/base/atomic_write.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace commbound {

Status write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()));
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return Error{path.string() + ": cannot write (" + std::strerror(errno) + ")"};
    out << text;
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return Error{path.string() + ": write failed"};
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    return Error{path.string() + ": cannot move into place: " + why};
  }
  return Ok{};
}

}  // namespace commbound
