// What the rig's own multi-process NCCL programs share (bench/rig/dying_rank.cpp,
// bench/host_time_probe.cpp): the rank and size their launcher gives (MPICH's mpiexec, Open MPI,
// torchrun), sizes written as nccl-tests writes them (4K, 256M, 1G), and NCCL's id handed from
// rank 0 to the others through a file. No MPI: the programs run with plain NCCL and under
// LD_PRELOAD=libbraid.so alike.
#pragma once

#include <nccl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace rig {

inline constexpr const char* kRankVariables[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "RANK", nullptr};
inline constexpr const char* kSizeVariables[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", nullptr};

// The first of `names` (null-terminated) that is set and not empty, else `fallback`.
inline int env_int(const char* const* names, int fallback) {
  for (const char* const* n = names; *n; ++n)
    if (const char* v = std::getenv(*n); v && *v) return std::atoi(v);
  return fallback;
}

// Bytes from "256M", "4K", "1G" or a plain number.
inline size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (end && *end ? *end : ' ') {
    case 'K': case 'k': v *= 1024.0; break;
    case 'M': case 'm': v *= 1024.0 * 1024.0; break;
    case 'G': case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

// Rank 0's half: the id written whole (a rename, so a reader never sees part of it). Returns the
// error, or an empty string.
inline std::string write_id(const std::string& path, const ncclUniqueId& id) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return "cannot write " + tmp + ": " + std::strerror(errno);
  const bool ok = std::fwrite(&id, sizeof id, 1, f) == 1;
  if (std::fclose(f) != 0 || !ok) return "cannot write " + tmp;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return "cannot rename " + tmp + ": " + std::strerror(errno);
  return {};
}

// The other ranks' half: waits up to `timeout` seconds for the file. False if it never came.
inline bool read_id(const std::string& path, double timeout, ncclUniqueId* id) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const bool ok = std::fread(id, sizeof *id, 1, f) == 1;
      std::fclose(f);
      if (ok) return true;  // rank 0 renames a complete file into place
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace rig
