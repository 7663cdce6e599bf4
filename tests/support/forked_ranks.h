// Ranks as fork()ed processes, for the GPU tests that need one process per rank: the parent must
// not have touched CUDA (a fork()ed child could not use it), and a rank that hangs is killed, so
// a test fails instead of hanging. Free of CUDA.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace braid::test {

// How one forked rank ended.
struct RankExit {
  bool forked = false;  // false: fork() failed, nothing ran
  bool killed = false;  // still running at the limit, so killed
  int code = -1;        // its exit code, or 128 + the signal that ended it
  bool ok() const { return forked && !killed && code == 0; }
  std::string what() const {
    if (!forked) return "fork failed";
    if (killed) return "killed at the time limit (a hang)";
    return code >= 128 ? "died of signal " + std::to_string(code - 128) : "exit code " + std::to_string(code);
  }
};

// Each role in a process of its own, its return value the exit code. `forked`, where given, runs in
// the parent once all are started (to close its copies of what joins them). Past `limit` every
// rank still running is killed.
inline std::vector<RankExit> run_forked(const std::vector<std::function<int()>>& roles, std::chrono::seconds limit,
                                        const std::function<void()>& forked = {}) {
  std::vector<RankExit> exits(roles.size());
  std::vector<pid_t> pids(roles.size(), -1);
  for (size_t r = 0; r < roles.size(); ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(roles[r]());
    pids[r] = pid;
    exits[r].forked = pid > 0;
  }
  if (forked) forked();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  size_t left = 0;
  for (pid_t pid : pids) left += pid > 0 ? 1 : 0;
  std::vector<bool> done(roles.size(), false);
  while (left > 0) {
    for (size_t r = 0; r < roles.size(); ++r) {
      int status = 0;
      if (pids[r] <= 0 || done[r] || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      exits[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      done[r] = true;
      --left;
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < roles.size(); ++r) {
        if (pids[r] <= 0 || done[r]) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        exits[r].killed = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exits;
}

}  // namespace braid::test
