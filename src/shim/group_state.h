// The calling thread's ncclGroupStart/ncclGroupEnd nesting, as braid sees it.
// NCCL's groups are per thread, so braid's view is too. The real NCCL still gets every
// GroupStart/GroupEnd (its own group semantics hold); braid only counts the operations queued
// inside the outermost group, which the later path splitting launches at the outermost end.
#pragma once

namespace braid::shim {

class GroupState {
 public:
  // After NCCL accepted a ncclGroupStart.
  void on_start();
  // After a ncclGroupEnd reached NCCL. Returns true when it closed the outermost group.
  bool on_end();
  // After NCCL accepted a collective (true) or a send/recv (false).
  void on_operation(bool collective);

  // Whether the open outermost group may still hold its collectives back for splitting at its
  // end: only while everything it got was held back (stop_deferring when something is not).
  bool deferring() const { return depth_ > 0 && !mixed_; }
  void stop_deferring() { mixed_ = true; }

  int depth() const { return depth_; }
  bool in_group() const { return depth_ > 0; }
  // Operations queued so far inside the open outermost group.
  int pending_collectives() const { return pending_collectives_; }
  int pending_p2p() const { return pending_p2p_; }
  // What the last closed outermost group held.
  int last_group_collectives() const { return last_group_collectives_; }
  int last_group_p2p() const { return last_group_p2p_; }

 private:
  int depth_ = 0;
  bool mixed_ = false;
  int pending_collectives_ = 0;
  int pending_p2p_ = 0;
  int last_group_collectives_ = 0;
  int last_group_p2p_ = 0;
};

// The calling thread's state.
GroupState& this_thread_group();

}  // namespace braid::shim
