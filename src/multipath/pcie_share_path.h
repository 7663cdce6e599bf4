// braid's PCIe path (HyLink's: D2H, host routing and SIMD reduction, H2D, through the engine) as
// a path. The engine drives the share's host work before enqueue returns, so the orchestrator
// calls it from its progress thread, on a stream of its own forked from the caller's.
#pragma once

#include "braid/braid.h"
#include "multipath/share_path.h"

namespace braid::multipath {

class PcieSharePath final : public SharePath {
 public:
  explicit PcieSharePath(braidComm_t comm) : comm_(comm) {}

  const char* name() const override { return "pcie"; }
  bool carries(const ShareCall& share) const override { return splittable(share.call.collective); }
  Result enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) override;

 private:
  braidComm_t comm_;
};

}  // namespace braid::multipath
