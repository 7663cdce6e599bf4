// Where one collective through the drop-in goes, and why: one decision per call (docs/MULTIPATH.md,
// "Admission"). The shim gathers what it knows of the call and its communicator (AdmissionFacts)
// and hands the questions that cost a CUDA call to AdmissionProbes, asked only when the decision
// reaches them: a call too small for braid's part costs no CUDA call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace braid::multipath {

enum class Route : uint8_t {
  Nccl,      // NCCL alone, as without braid
  Hold,      // inside an NCCL group: held, to be split when the group ends
  Make,      // the first call braid's part may take: the ranks agree, make it, then ask again
  Split,     // NCCL's share and braid's
  Staged,    // split, through device memory (the buffers are not on the communicator's GPU)
  Captured,  // captured in a CUDA graph: braid's NVLink path may carry it whole (else NCCL)
};

// Ordered as the decision asks. Reasons from GroupHoldingOff on concern calls braid's part takes:
// a split trace records those that went to NCCL (Admission::traced).
enum class AdmissionReason : uint8_t {
  NotSplittable,         // all-to-all, gather, scatter, send/recv: braid has no split for them
  InvalidType,           // a data type NCCL refuses
  CommUnknown,           // braid does not know the communicator's rank, size or GPU (yet)
  OneRank,               // nothing to split among one rank
  NonBlocking,           // a non-blocking communicator
  Revoked,               // ncclCommRevoke'd
  SizeOverflow,          // the message's bytes do not fit a size_t
  BelowFirstSize,        // no part yet, and the call is below the size that makes it
  PartDeclined,          // braid's part was not made on this communicator, for good
  PreMulSum,             // each rank's scalar is needed before the ranks meet: NCCL alone
  BelowSplitSize,        // the part's paths take calls from a larger size
  GroupHoldingOff,       // inside a group, BRAID_SPLIT_GROUPS=0
  GroupNotWorthHolding,  // inside a group, BRAID_SPLIT_GROUPS=auto, where holding did not pay
  GroupNotDeferring,     // inside a group that already handed an operation to NCCL
  CapturedInGroup,       // inside a group, captured in a graph
  CapturedBeforeMade,    // captured in a graph before braid's part exists (making it allocates)
  GpuRefuses,            // the communicator's error, FP8 below sm90, or buffers CUDA does not map
  StagedCaptured,        // buffers that need staging, captured in a graph
  Taken,                 // braid's part takes it (or, Make, may)
};

// The collectives braid splits (AllToAll, Gather, Scatter and send/recv go to NCCL).
inline bool splittable(Collective c) {
  return c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter ||
         c == Collective::Broadcast || c == Collective::Reduce;
}

// BRAID_SPLIT_GROUPS.
enum class GroupHolding : uint8_t { Off, Auto, On };

// Every fact the decision needs that costs no CUDA call.
struct AdmissionFacts {
  Collective collective = Collective::AllReduce;
  bool type_valid = true;
  bool premulsum = false;  // the operator is one the application made (ncclRedOpCreatePreMulSum)
  bool bytes_fit = true;
  size_t bytes = 0;        // the message as nccl-tests counts it (message_bytes)
  // The communicator.
  bool comm_known = false;
  int nranks = 0;
  bool blocking = true;
  bool revoked = false;
  // braid's part of it: not yet made (`part_attempted` false), made, or declined for good.
  bool part_attempted = false;
  bool part_made = false;
  bool part_may_make = false;  // not attempted: this call is one that makes it
  bool part_takes = false;     // made: its paths take a call of this collective and size
  // The calling thread's NCCL group.
  bool in_group = false;
  bool group_defers = false;  // the group still holds calls back (nothing of it went to NCCL)
  GroupHolding group_holding = GroupHolding::Auto;
  size_t group_min_bytes = 0;  // BRAID_SPLIT_GROUPS_MIN_BYTES (auto)
};

// What only CUDA can say, asked lazily; each at most once per call.
enum class BufferFit : uint8_t { Usable, Staged, Unusable };
class AdmissionProbes {
 public:
  virtual ~AdmissionProbes() = default;
  virtual bool capturing() = 0;  // the stream is being captured into a graph
  // The communicator's asynchronous error, FP8 support and the call's buffers (Unusable: NCCL alone).
  virtual BufferFit buffers() = 0;
};

struct Admission {
  Route route = Route::Nccl;
  AdmissionReason reason = AdmissionReason::NotSplittable;
  BufferFit fit = BufferFit::Usable;  // as probed (Usable where never asked)
  bool capturing = false;             // as probed (false where never asked)
  // A call braid's part takes that went to NCCL: a split trace records it.
  bool traced() const { return route == Route::Nccl && reason >= AdmissionReason::GroupHoldingOff; }
};

Admission admit(const AdmissionFacts& facts, AdmissionProbes& probes);

// "below the size that makes braid's part": for logs and the split trace.
const char* reason_text(AdmissionReason reason);
const char* route_name(Route route);

}  // namespace braid::multipath
