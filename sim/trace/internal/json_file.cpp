#include "sim/trace/internal/json_file.hpp"

#include <zlib.h>

#include <array>
#include <istream>
#include <memory>
#include <streambuf>

namespace commbound::sim::internal {
namespace {

// A read-only stream over a gzip (or plain) file, so that a large trace is parsed as it is
// decompressed instead of being held whole as text first.
class GzipStreambuf : public std::streambuf {
public:
  explicit GzipStreambuf(gzFile file) : file_(file) {}
  std::size_t bytes_read() const { return bytes_read_; }

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (n <= 0) return traits_type::eof();
    bytes_read_ += static_cast<std::size_t>(n);
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(buffer_[0]);
  }

private:
  gzFile file_;
  std::array<char, 1 << 16> buffer_{};
  std::size_t bytes_read_ = 0;
};

}  // namespace

Expected<nlohmann::json> read_json_file(const std::string& path, const KeepObject& keep) {
  std::unique_ptr<gzFile_s, decltype(&gzclose_r)> file(gzopen(path.c_str(), "rb"), gzclose_r);
  if (!file) return Error{path + ": cannot be read"};
  GzipStreambuf buffer(file.get());
  std::istream in(&buffer);
  // zlib's verdict on the bytes read so far: a gzip stream that ends early is the file's fault,
  // whatever the JSON parser then says.
  auto gzip_error = [&]() -> std::optional<Error> {
    int code = Z_OK;
    const char* message = gzerror(file.get(), &code);
    if (code == Z_OK || code == Z_STREAM_END) return std::nullopt;
    std::string reason = message != nullptr ? message : "error";
    if (reason.rfind(path + ": ", 0) == 0) reason = reason.substr(path.size() + 2);  // zlib names the file too
    return Error{path + ": truncated or corrupt gzip after " + std::to_string(buffer.bytes_read()) + " bytes (zlib: " +
                 reason + ")"};
  };
  try {
    nlohmann::json doc =
        keep ? nlohmann::json::parse(in, [&keep](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                 return event != nlohmann::json::parse_event_t::object_end || keep(depth, parsed);
               })
             : nlohmann::json::parse(in);
    if (auto error = gzip_error()) return *error;
    return doc;
  } catch (const nlohmann::json::parse_error& e) {
    if (auto error = gzip_error()) return *error;
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ...": keep the reason.
    std::string reason = e.what();
    if (const auto at = reason.find(": "); at != std::string::npos) reason = reason.substr(at + 2);
    return Error{path + ": not valid JSON at byte " + std::to_string(e.byte) +
                 (e.byte >= buffer.bytes_read() ? " (the end: a truncated file?)" : "") + ": " + reason};
  }
}

}  // namespace commbound::sim::internal
