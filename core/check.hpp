// COMMBOUND_CHECK: an always-on assertion for broken invariants. Unlike assert()
// it stays in release builds (RelWithDebInfo defines NDEBUG): a broken invariant is a bug in
// commbound, reported with its place and condition, never a wrong number printed as a result.
// Bad user input is never checked this way: it is an Error value (expected.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>

#define COMMBOUND_CHECK(condition, what)                                                                        \
  do {                                                                                                          \
    if (!(condition)) {                                                                                         \
      std::fprintf(stderr, "commbound: internal error at %s:%d: %s (%s)\n", __FILE__, __LINE__, what, #condition); \
      std::abort();                                                                                             \
    }                                                                                                           \
  } while (false)
