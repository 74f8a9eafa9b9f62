#include "core/child_process.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

namespace commbound {
namespace {

// Set by Ctrl-C (SIGINT) while run_in_children waits on its children.
volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

// While it lives, Ctrl-C sets g_interrupted instead of ending the process, and interrupts the
// parent's poll (no SA_RESTART), so the children can be stopped and the caller can say so.
class InterruptCatcher {
public:
  InterruptCatcher() {
    struct sigaction catcher {};
    catcher.sa_handler = on_interrupt;
    sigemptyset(&catcher.sa_mask);
    sigaction(SIGINT, &catcher, &previous_);
  }
  ~InterruptCatcher() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;

private:
  struct sigaction previous_ {};
};

// The child's message: one tag byte ('V' value, 'E' error) and the text.
constexpr char kValueTag = 'V';
constexpr char kErrorTag = 'E';

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string received;
};

// Forks a child that runs `work` and writes its tagged result to a pipe.
Expected<Child> start(const ChildWork& work) {
  int fds[2];
  if (pipe(fds) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  std::fflush(nullptr);  // the child must not repeat the parent's buffered output
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Error{std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    // A process group of its own: a terminal's Ctrl-C reaches the parent alone, which stops its
    // children itself (SimGrid would otherwise catch it in every child and print its own exit).
    setpgid(0, 0);
    std::signal(SIGINT, SIG_DFL);
    close(fds[0]);
    const Expected<std::string> result = work();
    write_all(fds[1], result ? std::string(1, kValueTag) + *result : std::string(1, kErrorTag) + result.error().message);
    close(fds[1]);
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  return Child{pid, fds[0], {}};
}

// Reaps `child` and turns what it sent into its result.
Expected<std::string> finish(Child& child) {
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!child.received.empty() && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    const std::string text = child.received.substr(1);
    if (child.received[0] == kValueTag) return text;
    return Error{text};
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return Error{std::string("the simulation process was killed by signal ") + std::to_string(sig) + " (" +
                 strsignal(sig) + ")"};
  }
  return Error{"the simulation process exited with status " + std::to_string(WEXITSTATUS(status)) +
               " without a result"};
}

// Reads what is available on `child`'s pipe; false at end of file.
bool drain(Child& child) {
  char buf[65536];
  const ssize_t n = read(child.fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  child.received.append(buf, static_cast<std::size_t>(n));
  return true;
}

}  // namespace

bool interrupted() { return g_interrupted != 0; }

Expected<std::string> run_in_child(const ChildWork& work) {
  auto child = start(work);
  if (!child) return child.error();
  while (drain(*child)) {
  }
  return finish(*child);
}

std::vector<Expected<std::string>> run_in_children(
    std::size_t count, int jobs, const std::function<Expected<std::string>(std::size_t)>& work,
    const std::function<void(std::size_t, const Expected<std::string>&)>& on_done,
    const std::function<bool(std::size_t)>& start_if) {
  COMMBOUND_CHECK(jobs >= 1, "run_in_children needs at least one job");
  std::vector<Expected<std::string>> results(count, Error{"not started"});
  std::map<std::size_t, Child> running;  // by index
  g_interrupted = 0;
  const InterruptCatcher catcher;
  std::size_t next = 0;
  auto complete = [&](std::size_t i, Expected<std::string> r) {
    results[i] = std::move(r);
    if (on_done) on_done(i, results[i]);
  };
  while (next < count || !running.empty()) {
    if (g_interrupted) {  // Ctrl-C: stop every child, start no more
      for (auto& [i, c] : running) {
        kill(c.pid, SIGKILL);
        (void)finish(c);  // reaped; what it had sent is dropped
        complete(i, Error{kInterruptedMessage});
      }
      break;
    }
    while (next < count && static_cast<int>(running.size()) < jobs) {
      const std::size_t i = next++;
      if (start_if && !start_if(i)) continue;
      auto child = start([&work, i] { return work(i); });
      if (!child) {
        complete(i, child.error());
      } else {
        running.emplace(i, std::move(*child));
      }
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    for (auto& [i, c] : running) {
      fds.push_back({c.fd, POLLIN, 0});
      index.push_back(i);
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Child& c = running.at(index[k]);
      if (!drain(c)) {
        complete(index[k], finish(c));
        running.erase(index[k]);
      }
    }
  }
  return results;
}

}  // namespace commbound
