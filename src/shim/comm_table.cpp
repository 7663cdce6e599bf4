#include "shim/comm_table.h"

namespace braid::shim {

void CommTable::insert(ncclComm* comm, CommState state) {
  std::lock_guard lock(mutex_);
  states_[comm] = std::move(state);
}

bool CommTable::erase(ncclComm* comm) {
  std::lock_guard lock(mutex_);
  return states_.erase(comm) > 0;
}

std::optional<CommState> CommTable::take(ncclComm* comm) {
  std::lock_guard lock(mutex_);
  auto it = states_.find(comm);
  if (it == states_.end()) return std::nullopt;
  CommState state = std::move(it->second);
  states_.erase(it);
  return state;
}

std::optional<CommState> CommTable::find(ncclComm* comm) const {
  std::lock_guard lock(mutex_);
  auto it = states_.find(comm);
  if (it == states_.end()) return std::nullopt;
  return it->second;
}

std::optional<CommState> CommTable::complete_from(ncclComm* comm, const CommState& known) {
  std::lock_guard lock(mutex_);
  auto it = states_.find(comm);
  if (it == states_.end()) return std::nullopt;
  CommState& state = it->second;
  if (state.rank < 0) state.rank = known.rank;
  if (state.nranks < 0) state.nranks = known.nranks;
  if (state.cuda_device < 0) state.cuda_device = known.cuda_device;
  return state;
}

bool CommTable::mark_revoked(ncclComm* comm) {
  std::lock_guard lock(mutex_);
  auto it = states_.find(comm);
  if (it == states_.end()) return false;
  it->second.revoked = true;
  return true;
}

size_t CommTable::size() const {
  std::lock_guard lock(mutex_);
  return states_.size();
}

CommTable& comm_table() {
  // Never destroyed: communicators may still be destroyed from other libraries' exit handlers.
  static CommTable* table = new CommTable;
  return *table;
}

}  // namespace braid::shim
