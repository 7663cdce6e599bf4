#include "common/process.h"

#include <cerrno>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace braid {

bool process_dead(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // Alive or a zombie: a SIGKILLed child stays a zombie until its parent reaps it.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return errno == ENOENT;
  char buffer[512];
  size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  const char* close_paren = std::strrchr(buffer, ')');
  if (close_paren == nullptr || close_paren[1] == '\0') return false;
  const char state = close_paren[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

uint64_t pid_namespace() {
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

bool peer_process_dead(pid_t pid, uint64_t pid_ns) {
  // Not cached: a process forked after unshare(CLONE_NEWPID) lives in a namespace its parent does not.
  const uint64_t own = pid_namespace();
  if (pid_ns != 0 && own != 0 && pid_ns != own) return false;
  return process_dead(pid);
}

}  // namespace braid
