// Child processes (core/child_process.hpp): results come back in index order, and Ctrl-C stops
// the children still running instead of waiting for them.
#include "core/child_process.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>

namespace commbound {
namespace {

TEST(RunInChildren, ResultsComeBackInIndexOrder) {
  // Child i answers i squared; child 2 fails. Three jobs at once, five works.
  auto results = run_in_children(5, 3, [](std::size_t i) -> Expected<std::string> {
    if (i == 2) return Error{"two"};
    return std::to_string(i * i);
  });
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(*results[0], "0");
  EXPECT_EQ(*results[1], "1");
  EXPECT_EQ(results[2].error().message, "two");
  EXPECT_EQ(*results[4], "16");
  EXPECT_FALSE(interrupted());
}

TEST(RunInChildren, CtrlCStopsTheRunningChildrenAndStartsNoMore) {
  // Work 0 ends at once and its on_done raises SIGINT, as a terminal's Ctrl-C would reach the
  // parent; work 1 would sleep 60 s, works 2-3 wait for a free job. Expected: 0 keeps its result,
  // 1 is stopped ("interrupted"), 2-3 never start, and it all ends well before work 1 would have.
  const auto start = std::chrono::steady_clock::now();
  auto results = run_in_children(
      4, 2,
      [](std::size_t i) -> Expected<std::string> {
        if (i > 0) sleep(60);
        return std::to_string(i);
      },
      [](std::size_t i, const Expected<std::string>&) {
        if (i == 0) std::raise(SIGINT);
      });
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(interrupted());
  EXPECT_EQ(*results[0], "0");
  EXPECT_EQ(results[1].error().message, kInterruptedMessage);
  EXPECT_EQ(results[2].error().message, "not started");
  EXPECT_EQ(results[3].error().message, "not started");
  EXPECT_LT(took_s, 30);
  // The catcher is gone: SIGINT is back to what it was (gtest's default: terminate).
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace commbound
