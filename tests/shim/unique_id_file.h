// The ncclUniqueId handed from rank 0 to the other processes through a file, for the GPU programs
// started by hand (mpiexec -n N) that have no MPI of their own. Each run needs a fresh path.
#pragma once

#include <nccl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

namespace braid::shimtest {

// Rank 0 makes the id and writes it; the others wait up to two minutes for it. An empty string,
// or what went wrong.
inline std::string exchange_unique_id(int rank, int size, const char* path, ncclUniqueId* id) {
  *id = ncclUniqueId{};
  if (size == 1 || rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return "ncclGetUniqueId failed";
    if (size == 1) return "";
  }
  if (path == nullptr || *path == '\0') return "no file named for the ncclUniqueId";
  if (rank == 0) {
    // Written whole under another name, then renamed: a reader never sees half an id.
    const std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr || std::fwrite(id, sizeof *id, 1, f) != 1 || std::fclose(f) != 0) return "cannot write " + tmp;
    if (std::rename(tmp.c_str(), path) != 0) return "cannot rename " + tmp + " to " + path;
    return "";
  }
  // A file older than this process by more than a minute is an earlier run's: waited out.
  const time_t started = std::time(nullptr);
  for (int tries = 0; tries < 1200; ++tries) {
    struct stat info{};
    if (stat(path, &info) == 0 && info.st_size == static_cast<off_t>(sizeof *id) && info.st_mtime >= started - 60) {
      FILE* f = std::fopen(path, "rb");
      const bool read = f != nullptr && std::fread(id, sizeof *id, 1, f) == 1;
      if (f != nullptr) std::fclose(f);
      if (read) return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::string("no ncclUniqueId in ") + path + " after 120 s";
}

}  // namespace braid::shimtest
