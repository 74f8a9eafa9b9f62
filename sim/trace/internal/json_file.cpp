#include "sim/trace/internal/json_file.hpp"

#include <zlib.h>

#include <array>
#include <memory>

namespace commbound::sim::internal {

Expected<nlohmann::json> read_json_file(const std::string& path) {
  std::unique_ptr<gzFile_s, decltype(&gzclose_r)> file(gzopen(path.c_str(), "rb"), gzclose_r);
  if (!file) return Error{path + ": cannot be read"};
  std::string text;
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    const int n = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  int code = Z_OK;
  const char* message = gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    std::string reason = message != nullptr ? message : "error";
    if (reason.rfind(path + ": ", 0) == 0) reason = reason.substr(path.size() + 2);  // zlib names the file too
    return Error{path + ": truncated or corrupt gzip after " + std::to_string(text.size()) + " bytes (zlib: " + reason + ")"};
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ...": keep the reason.
    std::string reason = e.what();
    if (const auto at = reason.find(": "); at != std::string::npos) reason = reason.substr(at + 2);
    return Error{path + ": not valid JSON at byte " + std::to_string(e.byte) +
                 (e.byte >= text.size() ? " (the end: a truncated file?)" : "") + ": " + reason};
  }
}

}  // namespace commbound::sim::internal
