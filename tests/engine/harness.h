// Test harness: runs one body per rank, with ranks as threads or as forked processes over real
// shared memory, and collects each rank's output bytes and result in memory the parent reads.
#pragma once

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "device/cpu_backend.h"
#include "engine/communicator.h"
#include "topo/topology.h"

namespace braid::test {

enum class Mode { Threads, Processes };
inline const char* mode_name(Mode m) { return m == Mode::Threads ? "threads" : "processes"; }
// How gtest prints a Mode parameter in its messages: by name, not as a number.
inline void PrintTo(Mode m, std::ostream* os) { *os << mode_name(m); }
// A parameterised test's name from a BRAID_FAULT text and a mode: "segments@0" -> "segments_0_threads".
inline std::string fault_case_name(std::string fault, Mode m) {
  for (char& ch : fault)
    if (ch == '@' || ch == '#') ch = '_';
  return fault + "_" + mode_name(m);
}

// A rank's body: runs collectives on `comm`, writes its output into `out` (out_bytes long).
using Body = std::function<Result(engine::Communicator& comm, int rank, unsigned char* out)>;
// The device a rank runs on, where a test brings its own (ranks as threads only); null: a
// CpuBackend of the rank's own.
using BackendOf = std::function<device::Backend*(int rank)>;

struct RankOutcome {
  Result result = Result::Success;
  std::string error;  // last_error() after a failure
  std::vector<unsigned char> output;
};

// Shared (across fork) scratch: per rank a result word, an error text and the output bytes.
class SharedArea {
 public:
  SharedArea(int ranks, size_t out_bytes) : ranks_(ranks), out_bytes_(out_bytes) {
    bytes_ = static_cast<size_t>(ranks) * (kHeader + out_bytes) + 1;
    base_ = static_cast<unsigned char*>(
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  }
  ~SharedArea() { munmap(base_, bytes_); }
  unsigned char* slot(int r) const { return base_ + static_cast<size_t>(r) * (kHeader + out_bytes_); }
  int* result(int r) const { return reinterpret_cast<int*>(slot(r)); }
  char* error(int r) const { return reinterpret_cast<char*>(slot(r) + 8); }
  unsigned char* output(int r) const { return slot(r) + kHeader; }
  void record(int r, Result res) const {
    *result(r) = static_cast<int>(res);
    if (res != Result::Success) std::snprintf(error(r), kHeader - 9, "%s", last_error());
  }
  static constexpr size_t kHeader = 1024;

 private:
  int ranks_;
  size_t out_bytes_;
  size_t bytes_;
  unsigned char* base_;
};

inline Result run_rank(const engine::CommId& id, int rank, int nranks, const topo::Topology& topo,
                       const SharedArea& area, const Body& body, const BackendOf& backend_of = nullptr) {
  std::optional<device::CpuBackend> own;
  device::Backend* backend = backend_of ? backend_of(rank) : &own.emplace();
  std::unique_ptr<engine::Communicator> comm;
  Result r = engine::Communicator::create(id, rank, nranks, topo, backend, &comm);
  if (r == Result::Success) r = body(*comm, rank, area.output(rank));
  area.record(rank, r);
  return r;
}

// Runs `body` on `nranks` ranks; returns one outcome per rank.
inline std::vector<RankOutcome> run_ranks(Mode mode, int nranks, const topo::Topology& topo,
                                          size_t out_bytes, const Body& body,
                                          const BackendOf& backend_of = nullptr) {
  if (mode == Mode::Processes && backend_of) std::abort();  // a backend's queue threads do not fork
  SharedArea area(nranks, out_bytes);
  const engine::CommId id = engine::CommId::random();
  if (mode == Mode::Threads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r)
      threads.emplace_back([&, r] { run_rank(id, r, nranks, topo, area, body, backend_of); });
    for (auto& t : threads) t.join();
  } else {
    std::vector<pid_t> pids;
    for (int r = 0; r < nranks; ++r) {
      pid_t pid = fork();
      if (pid == 0) {
        Result res = run_rank(id, r, nranks, topo, area, body);
        _exit(res == Result::Success ? 0 : 1);
      }
      pids.push_back(pid);
    }
    for (int r = 0; r < nranks; ++r) {
      int status = 0;
      waitpid(pids[r], &status, 0);
      if (!WIFEXITED(status)) {
        *area.result(r) = static_cast<int>(Result::SystemError);
        std::snprintf(area.error(r), 100, "child exited abnormally (status %d)", status);
      }
    }
  }
  std::vector<RankOutcome> outcomes(nranks);
  for (int r = 0; r < nranks; ++r) {
    outcomes[r].result = static_cast<Result>(*area.result(r));
    outcomes[r].error = area.error(r);
    outcomes[r].output.assign(area.output(r), area.output(r) + out_bytes);
  }
  return outcomes;
}

inline topo::Topology load_test_topology(const std::string& name = "hylink-3090x4") {
  topo::Topology t;
  Result r = topo::load_topology_file(std::string(BRAID_SOURCE_DIR) + "/topologies/" + name + ".json", &t);
  if (r != Result::Success) std::abort();
  return t;
}

}  // namespace braid::test
