// Runs a piece of a test in a forked child that may change what only it should see (a private
// mount namespace with a small /dev/shm, a pid namespace of its own), and brings back its
// outcomes: ranks' results and error texts, and whether it ended by a signal (SIGBUS).
#pragma once

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

namespace braid::test {

// What the child reports: a skip reason, or up to four ranks' results and texts.
struct ChildReport {
  char skip[200];
  int result[4];
  char error[4][600];
  double seconds;
};

struct ChildEnd {
  ChildReport report{};
  int signal = 0;      // the signal that ended the child, 0 if it exited
  int exit_code = -1;
};

// Forks; the child runs `body` on a report in shared memory and exits; the parent waits.
inline ChildEnd run_in_child(const std::function<void(ChildReport*)>& body) {
  auto* shared = static_cast<ChildReport*>(
      mmap(nullptr, sizeof(ChildReport), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(shared, 0, sizeof *shared);
  const pid_t pid = fork();
  if (pid == 0) {
    body(shared);
    _exit(0);
  }
  ChildEnd end;
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
  if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
  end.report = *shared;
  munmap(shared, sizeof(ChildReport));
  return end;
}

}  // namespace braid::test
