#include "core/atomic_write.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace commbound {

Status replace_atomically(const std::filesystem::path& path,
                          const std::function<Status(const std::filesystem::path& tmp)>& produce) {
  namespace fs = std::filesystem;
  const fs::path tmp =
      path.parent_path() / ("." + path.stem().string() + ".tmp" + std::to_string(::getpid()) + path.extension().string());
  std::error_code ec;
  if (Status made = produce(tmp); !made) {
    fs::remove(tmp, ec);
    return made;
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    return Error{path.string() + ": cannot move into place: " + why};
  }
  return Ok{};
}

Status write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  return replace_atomically(path, [&](const std::filesystem::path& tmp) -> Status {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return Error{path.string() + ": cannot write (" + std::strerror(errno) + ")"};
    write(out);
    out.flush();
    if (!out) return Error{path.string() + ": write failed"};
    return Ok{};
  });
}

Status write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  return write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

}  // namespace commbound
