// braid's per-communicator state, kept beside the real NCCL communicator it belongs to.
// The shim returns NCCL's own ncclComm_t to the application, so braid never wraps or replaces
// a communicator: it looks its state up here by the real handle.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

struct ncclComm;  // NCCL's opaque communicator; ncclComm_t is `ncclComm*`.

namespace braid::shim {

// braid's part of a communicator (braid_part.h).
struct BraidPart;

struct CommState {
  int rank = -1;         // -1: not known yet (non-blocking init still in progress)
  int nranks = -1;
  int cuda_device = -1;
  // A non-blocking communicator (ncclConfig_t::blocking = 0) answers collectives with
  // ncclInProgress and completes them later; braid does not split on one (NCCL alone).
  bool blocking = true;
  std::shared_ptr<BraidPart> braid_part;  // null: everything goes to NCCL alone
  // ncclCommRevoke accepted: NCCL refuses every later collective (arguments.h).
  bool revoked = false;

  bool complete() const { return rank >= 0 && nranks > 0 && cuda_device >= 0; }
};

// Thread-safe map from the real ncclComm_t to braid's state. Entries are created when NCCL
// creates a communicator (init, split, shrink) and erased when the application destroys or
// aborts it.
class CommTable {
 public:
  // Adds or replaces the entry (NCCL may hand out an address again after a destroy).
  void insert(ncclComm* comm, CommState state);
  // Returns whether an entry was removed.
  bool erase(ncclComm* comm);
  // Removes the entry and hands it over (nothing when there was none).
  std::optional<CommState> take(ncclComm* comm);
  std::optional<CommState> find(ncclComm* comm) const;
  // Fills the fields still unknown (-1) from `known`; returns the merged state, or nothing
  // when the communicator is not in the table.
  std::optional<CommState> complete_from(ncclComm* comm, const CommState& known);
  // Marks the communicator revoked; false when it is not in the table.
  bool mark_revoked(ncclComm* comm);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<ncclComm*, CommState> states_;
};

// The process-wide table the shim uses.
CommTable& comm_table();

}  // namespace braid::shim
