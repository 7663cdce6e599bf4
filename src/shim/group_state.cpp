#include "shim/group_state.h"

namespace braid::shim {

void GroupState::on_start() {
  if (depth_ == 0) {
    pending_collectives_ = 0;
    pending_p2p_ = 0;
    mixed_ = false;
  }
  ++depth_;
}

bool GroupState::on_end() {
  // An unmatched ncclGroupEnd is NCCL's error to report; braid's depth stays at zero.
  if (depth_ == 0) return false;
  if (--depth_ > 0) return false;
  last_group_collectives_ = pending_collectives_;
  last_group_p2p_ = pending_p2p_;
  pending_collectives_ = 0;
  pending_p2p_ = 0;
  return true;
}

void GroupState::on_operation(bool collective) {
  // Outside a group NCCL launches at once: nothing for braid to gather.
  if (depth_ == 0) return;
  if (collective) {
    ++pending_collectives_;
  } else {
    ++pending_p2p_;
  }
}

GroupState& this_thread_group() {
  thread_local GroupState state;
  return state;
}

}  // namespace braid::shim
