#include "sim/trace/internal/json_file.hpp"

#include "core/file_type.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <streambuf>
#include <vector>

namespace commbound::sim::internal {
namespace {

// A read-only stream over a gzip (or plain) file, so that a large trace is parsed as it is
// decompressed instead of being held whole as text first. It ends early, as if the file did, past
// `max_bytes` or once stop() is called: the parser then fails at once, and the reader says why.
class GzipStreambuf : public std::streambuf {
public:
  GzipStreambuf(gzFile file, std::size_t max_bytes) : file_(file), max_bytes_(max_bytes) {}
  std::size_t bytes_read() const { return bytes_read_; }
  bool too_long() const { return bytes_read_ > max_bytes_; }
  void stop() {
    stopped_ = true;
    setg(eback(), egptr(), egptr());  // what is left of the buffer is not read either
  }

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (stopped_ || too_long()) return traits_type::eof();
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (n <= 0) return traits_type::eof();
    bytes_read_ += static_cast<std::size_t>(n);
    if (too_long()) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(buffer_[0]);
  }

private:
  gzFile file_;
  std::size_t max_bytes_;
  bool stopped_ = false;
  std::array<char, 1 << 16> buffer_{};
  std::size_t bytes_read_ = 0;
};

// The values `j` holds, itself included: what leaving it out of the document gives back. Walked
// with a stack of its own: a hostile file may nest deeper than the call stack goes.
std::size_t values_in(const nlohmann::json& j) {
  std::size_t n = 0;
  std::vector<const nlohmann::json*> pending{&j};
  while (!pending.empty()) {
    const nlohmann::json* v = pending.back();
    pending.pop_back();
    ++n;
    if (v->is_structured()) {
      for (const auto& child : *v) pending.push_back(&child);
    }
  }
  return n;
}

}  // namespace

Expected<nlohmann::json> read_json_file(const std::string& path, const KeepObject& keep, const JsonLimits& limits) {
  if (Status ok = check_readable_file(path); !ok) return ok.error();
  std::unique_ptr<gzFile_s, decltype(&gzclose_r)> file(gzopen(path.c_str(), "rb"), gzclose_r);
  if (!file) return Error{path + ": cannot be read"};
  GzipStreambuf buffer(file.get(), limits.max_text_bytes);
  std::istream in(&buffer);
  // A bound crossed is the reason, whatever the JSON parser says of the text cut there.
  std::size_t kept = 0;  // values the document holds now
  bool too_deep = false;
  auto limit_error = [&]() -> std::optional<Error> {
    if (too_deep) {
      return Error{path + ": JSON nested more than " + std::to_string(limits.max_depth) +
                   " levels deep: not a profiler trace"};
    }
    if (buffer.too_long()) {
      return Error{path + ": more than " + std::to_string(limits.max_text_bytes >> 20) +
                   " MiB of JSON (decompressed): not one rank's profile of a few steps (profile fewer steps: docs/traces.md)"};
    }
    if (kept > limits.max_kept_values) {
      return Error{path + ": more than " + std::to_string(limits.max_kept_values) + " JSON values to hold after " +
                   std::to_string(buffer.bytes_read()) +
                   " bytes (decompressed): not one rank's profile of a few steps (profile fewer steps: docs/traces.md)"};
    }
    return std::nullopt;
  };
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
  // Counts the values the document holds as they are parsed, and leaves out the objects `keep`
  // rejects (giving their values back); past the bound the stream ends, and the parse with it.
  const nlohmann::json::parser_callback_t count_and_keep = [&](int depth, nlohmann::json::parse_event_t event,
                                                                nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    bool stays = true;
    if (event == Event::value || event == Event::object_start || event == Event::array_start) {
      ++kept;
    } else if (event == Event::object_end && keep && !keep(depth, parsed)) {
      kept -= std::min(kept, values_in(parsed));
      stays = false;
    }
    if (depth > limits.max_depth) too_deep = true;
    if (kept > limits.max_kept_values || too_deep) buffer.stop();
    return stays;
  };
  try {
    nlohmann::json doc = nlohmann::json::parse(in, count_and_keep);
    if (auto error = limit_error()) return *error;
    if (auto error = gzip_error()) return *error;
    return doc;
  } catch (const nlohmann::json::parse_error& e) {
    if (auto error = limit_error()) return *error;
    if (auto error = gzip_error()) return *error;
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ...": keep the reason.
    std::string reason = e.what();
    if (const auto at = reason.find(": "); at != std::string::npos) reason = reason.substr(at + 2);
    return Error{path + ": not valid JSON at byte " + std::to_string(e.byte) +
                 (e.byte >= buffer.bytes_read() ? " (the end: a truncated file?)" : "") + ": " + reason};
  } catch (const nlohmann::json::out_of_range& e) {
    // A number past a double ("1e400"): the parser refuses it with this instead of a parse_error.
    if (auto error = limit_error()) return *error;
    if (auto error = gzip_error()) return *error;
    std::string reason = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e400'"
    if (const auto at = reason.find("] "); at != std::string::npos) reason = reason.substr(at + 2);
    return Error{path + ": not valid JSON: " + reason + " (beyond the range of a double)"};
  }
}

}  // namespace commbound::sim::internal
