// braid's own NVLink path (src/peer: copy-engine AllGather, peer-reduction AllReduce) as a path.
// It lays its parts out from element 0 of every block, so it carries heads of blocks only.
#pragma once

#include <functional>
#include <memory>

#include "multipath/share_path.h"
#include "peer/peer_path.h"

namespace braid::multipath {

class PeerSharePath final : public SharePath {
 public:
  explicit PeerSharePath(std::unique_ptr<peer::PeerPath> path) : path_(std::move(path)) {}

  const char* name() const override { return "copy engines"; }
  bool carries(const ShareCall& share) const override { return path_->carries(share.call.collective(), share.op); }
  Result enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) override {
    peer::PeerPath::Publication mine;
    publish(share, range, &mine);
    peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
    const Result r = run(share, range, mine, stream, &outcome);
    *carried = outcome == peer::PeerPath::Outcome::Carried;
    return r;
  }
  // enqueue() in its two halves, both the calling thread's: what this rank tells its peers (its
  // buffers exported), then the meeting and the queued share, saying why nothing was queued where
  // nothing was.
  void publish(const ShareCall& share, ShareRange range, peer::PeerPath::Publication* mine) const {
    const nccl::Call& c = share.call;
    path_->publish(c.collective(), c.send, c.recv, c.count, static_cast<DataType>(c.type), range.count, mine);
  }
  Result run(const ShareCall& share, ShareRange range, const peer::PeerPath::Publication& mine, cudaStream_t stream,
             peer::PeerPath::Outcome* outcome, bool captured = false, const std::function<void()>& on_met = {}) {
    *outcome = peer::PeerPath::Outcome::Unshareable;
    if (range.begin != 0) return Result::Success;
    const nccl::Call& c = share.call;
    return path_->run(c.collective(), c.send, c.recv, c.count, static_cast<DataType>(c.type), share.op, range.count,
                      mine, stream, outcome, captured, on_met);
  }
  peer::PeerPath& path() { return *path_; }

 private:
  std::unique_ptr<peer::PeerPath> path_;
};

}  // namespace braid::multipath
