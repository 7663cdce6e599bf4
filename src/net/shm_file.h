// The net plugin's host-wide files in /dev/shm (the NIC board, relay pools), safe where other
// users share the host: their names must be known to every process of this user, so they are
// created with O_EXCL at mode 0600 (never opened in place of someone else's file), and a file
// found under such a name is used only when it is this user's, with no group or other access and
// the size expected. Files a process leaves behind are removed as early as can be: by the next
// process that finds them stale, and at exit (exit() or a return from main) when the plugin's
// finalize was skipped.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

#include "common/result.h"

namespace braid::net {

struct ShmFile {
  int fd = -1;      // -1: none
  size_t bytes = 0;
  dev_t dev = 0;    // which file it is (a name may come to name another)
  ino_t ino = 0;
};

// Creates `name` new (O_EXCL, mode 0600) with `bytes` allocated for real (posix_fallocate: a
// /dev/shm too small says so here, not with SIGBUS later). out->fd stays -1 (Success) when the
// name exists already.
Result create_shm_file(const std::string& name, size_t bytes, ShmFile* out);

// Opens an existing `name` for reading and writing. out->fd stays -1 (Success) when there is
// none. Another user's file is refused (SystemError, with the reason): it is never read, written
// or mapped. One of this user's own that others may read or write, or whose size stays outside
// [min_bytes, max_bytes] (a file being created is sized at once), is removed and out->fd stays -1:
// it cannot be trusted, or is the stale leftover of another version or of a process that died.
Result open_shm_file(const std::string& name, size_t min_bytes, size_t max_bytes, ShmFile* out);

// Removes `name` if it still names `file` (another process may have made a new one since).
void unlink_shm_file(const std::string& name, const ShmFile& file);

// Runs `cleanup` when this process exits (exit() or a return from main; not _exit, not a fatal
// signal) unless forget_at_exit(key) came first: what a finalize would have removed. A forked
// child that exits does not run its parent's.
void remove_at_exit(const void* key, std::function<void()> cleanup);
void forget_at_exit(const void* key);

}  // namespace braid::net
