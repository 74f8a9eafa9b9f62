// Expected<T>: a value or an Error, the way every fallible call in commbound reports failure. The core
// room (core/) holds the vocabulary every other room uses: kernels/, network/ and sim/
// include it, it includes nothing of theirs.
// Errors are values: only main() turns one into an exit code.
#pragma once

#include "core/check.hpp"

#include <string>
#include <utility>
#include <variant>

namespace commbound {

// What went wrong, already phrased for the user: "file:line: key 'a.b' = value: reason".
struct Error {
  std::string message;
};

// The value of a successful Expected<void> (see Status below).
struct Ok {};

template <class T>
class [[nodiscard]] Expected {
public:
  Expected(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() {
    COMMBOUND_CHECK(has_value(), "value() of an Expected that holds an error");
    return std::get<0>(state_);
  }
  const T& value() const {
    COMMBOUND_CHECK(has_value(), "value() of an Expected that holds an error");
    return std::get<0>(state_);
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    COMMBOUND_CHECK(!has_value(), "error() of an Expected that holds a value");
    return std::get<1>(state_);
  }
  // Success or a copy of the error, without the value (to check several results in one loop).
  Expected<Ok> status() const;

private:
  std::variant<T, Error> state_;
};

// Expected<void>: success or an Error.
using Status = Expected<Ok>;

template <class T>
Status Expected<T>::status() const {
  if (has_value()) return Ok{};
  return error();
}

}  // namespace commbound
