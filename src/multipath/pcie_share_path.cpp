#include "multipath/pcie_share_path.h"

#include "api/call.h"
#include "api/comm.h"

namespace braid::multipath {

Result PcieSharePath::enqueue(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* carried) {
  *carried = false;
  const SplitCall& call = share.call;
  const api::Call c{call.collective, call.send, call.recv, call.count, call.type, call.op, call.root};
  BRAID_TRY(api::run_resolved(comm_, c, share.op, share.op == RedOp::PreMulSum ? &share.scalar : nullptr, stream,
                              engine::BlockRange{range.begin, range.count}));
  *carried = true;
  return Result::Success;
}

}  // namespace braid::multipath
