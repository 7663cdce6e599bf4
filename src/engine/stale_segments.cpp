#include "engine/stale_segments.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <regex>

#include "common/log.h"
#include "common/process.h"
#include "engine/control.h"
#include "engine/shm.h"

namespace braid::engine {

namespace {

// A set-up removes a staging segment within microseconds of its control segment; one left alone
// for this long belongs to no set-up.
constexpr time_t kOrphanSeconds = 60;

// Reads the control segment's header where it is one of braid's, owned by this user, and mapped
// without risk (large enough); false otherwise.
bool read_creator(const std::string& path, pid_t* pid, uint64_t* pid_ns, bool* initialised) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && st.st_uid == geteuid() && static_cast<size_t>(st.st_size) >= sizeof(ControlHeader);
  if (ok) {
    void* p = mmap(nullptr, sizeof(ControlHeader), PROT_READ, MAP_SHARED, fd, 0);
    ok = p != MAP_FAILED;
    if (ok) {
      // A page of the header that was never allocated reads as zeros (tmpfs), never SIGBUS while
      // the file is this long.
      const auto* h = static_cast<const ControlHeader*>(p);
      *initialised = h->magic.load() == kControlMagic;
      *pid = static_cast<pid_t>(h->creator_pid.load());
      *pid_ns = h->creator_pid_ns.load();
      munmap(p, sizeof(ControlHeader));
    }
  }
  close(fd);
  return ok;
}

}  // namespace

std::vector<ShmFile> braid_shm_files() {
  static const std::regex engine_name("braid-([0-9a-f]{32})-(ctl|stage[0-9]+|board)");
  std::vector<ShmFile> files;
  DIR* dir = opendir(kShmDir);
  if (dir == nullptr) return files;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("braid-", 0) != 0) continue;
    ShmFile f;
    f.name = name;
    const std::string path = std::string(kShmDir) + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    f.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
    f.owner = st.st_uid;
    std::smatch m;
    f.engine = std::regex_match(name, m, engine_name);
    if (!f.engine) {
      f.state = "not a communicator's segment (the net plugin's?)";
    } else if (m[2] == "board") {
      f.state = "a communicator's exchange board (removed at its end)";
    } else if (m[2] == "ctl") {
      pid_t pid = 0;
      uint64_t pid_ns = 0;
      bool initialised = false;
      if (!read_creator(path, &pid, &pid_ns, &initialised)) {
        f.state = st.st_uid == geteuid() ? "unreadable" : "another user's";
      } else if (!initialised) {
        f.stale = time(nullptr) - st.st_mtime > kOrphanSeconds;
        f.state = f.stale ? "never initialised" : "being set up";
      } else if (peer_process_dead(pid, pid_ns)) {
        f.stale = true;
        f.state = "its set-up ended without removing it (creator pid " + std::to_string(pid) + " has ended)";
      } else {
        f.state = "in set-up (creator pid " + std::to_string(pid) +
                  (pid_ns != 0 && pid_ns != pid_namespace() ? ", of another pid namespace)" : " runs)");
      }
    }
    files.push_back(f);
  }
  closedir(dir);
  // Staging segments follow their control segment; without one they are orphans once old.
  for (ShmFile& f : files) {
    if (!f.engine || f.name.find("-stage") == std::string::npos) continue;
    const std::string ctl = f.name.substr(0, f.name.rfind('-')) + "-ctl";
    const ShmFile* owner = nullptr;
    for (const ShmFile& g : files)
      if (g.name == ctl) owner = &g;
    if (owner != nullptr) {
      f.stale = owner->stale;
      f.state = "staging of " + ctl + ": " + owner->state;
    } else {
      struct stat st {};
      const bool old = stat((std::string(kShmDir) + "/" + f.name).c_str(), &st) == 0 && time(nullptr) - st.st_mtime > kOrphanSeconds;
      f.stale = old && f.owner == geteuid();
      f.state = old ? "staging without its control segment" : "staging, its set-up ending";
    }
  }
  return files;
}

int remove_stale_segments() {
  int removed = 0;
  for (const ShmFile& f : braid_shm_files()) {
    if (!f.engine || !f.stale || f.owner != geteuid()) continue;
    if (shm_unlink(("/" + f.name).c_str()) == 0) {
      ++removed;
      BRAID_INFO(Shm, "removed %s from %s: %s", f.name.c_str(), kShmDir, f.state.c_str());
    }
  }
  return removed;
}

}  // namespace braid::engine
