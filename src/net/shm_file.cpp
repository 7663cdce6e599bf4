#include "net/shm_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace braid::net {

Result create_shm_file(const std::string& name, size_t bytes, ShmFile* out) {
  *out = ShmFile{};
  // glibc's shm_open adds O_NOFOLLOW: a link planted under the name is not followed.
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return errno == EEXIST ? Result::Success : fail(Result::SystemError, "creating %s: %s", name.c_str(), strerror(errno));
  struct stat st {};
  int e = posix_fallocate(fd, 0, off_t(bytes));
  if (e == 0 && fstat(fd, &st) != 0) e = errno;
  if (e != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return fail(Result::SystemError, "allocating %zu bytes for %s in /dev/shm: %s", bytes, name.c_str(), strerror(e));
  }
  *out = ShmFile{fd, bytes, st.st_dev, st.st_ino};
  return Result::Success;
}

Result open_shm_file(const std::string& name, size_t min_bytes, size_t max_bytes, ShmFile* out) {
  *out = ShmFile{};
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return errno == ENOENT ? Result::Success : fail(Result::SystemError, "opening %s: %s", name.c_str(), strerror(errno));
  struct stat st {};
  // A file of size 0 may be one its creator is sizing right now: give it a moment.
  for (int wait = 0; fstat(fd, &st) == 0 && st.st_size == 0 && wait < 20; ++wait) usleep(5000);
  if (st.st_uid != geteuid()) {
    close(fd);
    return fail(Result::SystemError, "refused /dev/shm%s: user %u owns it, not this user (%u); remove it",
                name.c_str(), unsigned(st.st_uid), unsigned(geteuid()));
  }
  const bool private_mode = (st.st_mode & 077) == 0 && S_ISREG(st.st_mode);
  if (!private_mode || size_t(st.st_size) < min_bytes || size_t(st.st_size) > max_bytes) {
    close(fd);
    unlink_shm_file(name, ShmFile{-1, 0, st.st_dev, st.st_ino});
    return Result::Success;
  }
  *out = ShmFile{fd, size_t(st.st_size), st.st_dev, st.st_ino};
  return Result::Success;
}

void unlink_shm_file(const std::string& name, const ShmFile& file) {
  // Opening the name again tells which file it names now (shm names live in /dev/shm).
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return;
  struct stat st {};
  const bool same = fstat(fd, &st) == 0 && st.st_dev == file.dev && st.st_ino == file.ino;
  close(fd);
  if (same) shm_unlink(name.c_str());
}

namespace {
struct ExitCleanups {
  std::mutex mu;
  // By key: the process that registered it (a forked child inherits the list, not the files to
  // remove) and what to run.
  std::map<const void*, std::pair<pid_t, std::function<void()>>> run;
};
ExitCleanups& exit_cleanups() {
  static ExitCleanups* c = new ExitCleanups();  // never destroyed: used from an atexit handler
  return *c;
}
void run_exit_cleanups() {
  ExitCleanups& c = exit_cleanups();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [key, entry] : c.run)
    if (entry.first == getpid()) entry.second();
  c.run.clear();
}
}  // namespace

void remove_at_exit(const void* key, std::function<void()> cleanup) {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(run_exit_cleanups); });
  ExitCleanups& c = exit_cleanups();
  std::lock_guard<std::mutex> lock(c.mu);
  c.run[key] = {getpid(), std::move(cleanup)};
}

void forget_at_exit(const void* key) {
  ExitCleanups& c = exit_cleanups();
  std::lock_guard<std::mutex> lock(c.mu);
  c.run.erase(key);
}

}  // namespace braid::net
