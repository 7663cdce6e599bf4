// Shared segments that a communicator's set-up leaves in /dev/shm when its ranks are killed before
// every rank attached (from then on the names are gone). A later set-up removes them; braid doctor
// lists them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::engine {

struct ShmFile {
  std::string name;      // as in /dev/shm: "braid-<32 hex>-ctl"
  uint64_t bytes = 0;    // allocated (not the apparent size)
  uid_t owner = 0;
  bool engine = false;   // a communicator's segment (else another braid file: the net plugin's)
  bool stale = false;    // an engine segment whose set-up ended without removing it
  std::string state;     // why it is, or is not, stale
};

// Every braid file in /dev/shm, the engine's judged stale or not: a control segment whose creator
// (rank 0) has ended, judged by pid within this pid namespace only, with its staging segments; a
// staging segment without its control segment for over a minute.
std::vector<ShmFile> braid_shm_files();

// Unlinks the stale engine segments this user owns (braid_shm_files); returns how many.
int remove_stale_segments();

}  // namespace braid::engine
