#include "common/thread_stacks.h"

#include <dirent.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace braid {

namespace {

constexpr int kMaxFrames = 48;

std::atomic<int> g_fd{-1};
std::atomic<bool> g_answered{false};

// Async-signal-safe: backtrace was called once before (its first call may load libgcc), and
// backtrace_symbols_fd writes without allocating.
void on_signal(int) {
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  const int fd = g_fd.load();
  if (fd >= 0) backtrace_symbols_fd(frames, n, fd);
  g_answered.store(true);
}

int stack_signal() { return SIGRTMIN + 7; }

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    void* warm[2];
    backtrace(warm, 2);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(stack_signal(), &sa, nullptr);
  });
}

void write_text(int fd, const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

void dump_thread_stacks(int fd) {
  // One dump at a time: the handler writes where g_fd points.
  static std::mutex dumping;
  std::lock_guard lock(dumping);
  install_once();
  g_fd.store(fd);
  const pid_t pid = getpid();
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    char name[64] = "?";
    char path[96];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    if (FILE* f = std::fopen(path, "r")) {
      if (std::fgets(name, sizeof name, f) != nullptr) name[std::strcspn(name, "\n")] = '\0';
      std::fclose(f);
    }
    char head[160];
    std::snprintf(head, sizeof head, "thread %d (%s):\n", tid, name);
    write_text(fd, head);
    g_answered.store(false);
    if (syscall(SYS_tgkill, pid, tid, stack_signal()) != 0) continue;
    const auto asked = std::chrono::steady_clock::now();
    while (!g_answered.load() && std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(200))
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (!g_answered.load()) write_text(fd, "  (did not answer: signals blocked, or stopped in the kernel)\n");
  }
  closedir(dir);
  g_fd.store(-1);
}

void name_this_thread(const char* name) {
  char shortened[16];
  std::snprintf(shortened, sizeof shortened, "%s", name);
  pthread_setname_np(pthread_self(), shortened);
}

}  // namespace braid
