// in_child: runs a computation in a forked child process and returns its result. SimGrid allows
// one engine (so one Platform) per process: a test that compares two platforms runs each in a child.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace commbound::testing {

// `f()` evaluated in a child process; -1 when the child failed to report.
inline double in_child(const std::function<double()>& f) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const double value = f();
    _exit(write(fds[1], &value, sizeof value) == sizeof value ? 0 : 1);
  }
  close(fds[1]);
  double value = -1;
  if (read(fds[0], &value, sizeof value) != sizeof value) value = -1;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return value;
}

}  // namespace commbound::testing
