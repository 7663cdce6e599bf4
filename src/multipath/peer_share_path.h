// braid's own NVLink path (src/peer: copy-engine AllGather, peer-reduction AllReduce) as a path.
// It lays its parts out from element 0 of every block, so it carries heads of blocks only.
#pragma once

#include <memory>

#include "multipath/share_path.h"
#include "peer/peer_path.h"

namespace braid::multipath {

class PeerSharePath final : public SharePath {
 public:
  explicit PeerSharePath(std::unique_ptr<peer::PeerPath> path) : path_(std::move(path)) {}

  const char* name() const override { return "copy engines"; }
  bool carries(const ShareCall& share) const override { return path_->carries(share.call.collective, share.op); }
  Result enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) override {
    *carried = false;
    if (range.begin != 0) return Result::Success;
    const SplitCall& c = share.call;
    return path_->run(c.collective, c.send, c.recv, c.count, static_cast<DataType>(c.type), share.op, range.count,
                      stream, carried);
  }

 private:
  std::unique_ptr<peer::PeerPath> path_;
};

}  // namespace braid::multipath
