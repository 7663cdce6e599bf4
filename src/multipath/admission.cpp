#include "multipath/admission.h"

namespace braid::multipath {

namespace {

// Where holding a group's calls back paid on GPUs (the held calls run on threads of their own):
// two ranks, AllReduce and AllGather from BRAID_SPLIT_GROUPS_MIN_BYTES; on 4x H200 it lost
// (0.70-0.78x NCCL at 256 MB, docs/PERFORMANCE.md).
bool worth_holding(const AdmissionFacts& f) {
  if (f.group_holding == GroupHolding::On) return true;
  return f.nranks == 2 && (f.collective == Collective::AllReduce || f.collective == Collective::AllGather) &&
         f.bytes >= f.group_min_bytes;
}

}  // namespace

Admission admit(const AdmissionFacts& f, AdmissionProbes& probes) {
  Admission a;
  const auto to = [&a](Route route, AdmissionReason reason) {
    a.route = route;
    a.reason = reason;
    return a;
  };
  const auto nccl = [&](AdmissionReason reason) { return to(Route::Nccl, reason); };
  using R = AdmissionReason;
  if (!splittable(f.collective)) return nccl(R::NotSplittable);
  if (!f.type_valid) return nccl(R::InvalidType);
  if (!f.comm_known) return nccl(R::CommUnknown);
  if (f.nranks < 2) return nccl(R::OneRank);
  if (!f.blocking) return nccl(R::NonBlocking);
  if (f.revoked) return nccl(R::Revoked);
  if (!f.bytes_fit) return nccl(R::SizeOverflow);
  if (!f.part_attempted && !f.part_may_make) return nccl(R::BelowFirstSize);
  if (f.part_attempted && !f.part_made) return nccl(R::PartDeclined);
  // Every rank brings the same operator kind to a call, so every rank declines alike.
  if (f.premulsum) return nccl(R::PreMulSum);
  if (f.part_made && !f.part_takes) return nccl(R::BelowSplitSize);
  if (f.in_group) {
    // NCCL launches at the group's end, for which braid's share would wait on the host: the call
    // is held until then, or goes to NCCL. Only what every rank answers alike may hold a call: a
    // rank holding a call that another hands to NCCL would wait for it at the group's end.
    if (f.group_holding == GroupHolding::Off) return nccl(R::GroupHoldingOff);
    if (!worth_holding(f)) return nccl(R::GroupNotWorthHolding);
    if (!f.group_defers) return nccl(R::GroupNotDeferring);
    a.capturing = probes.capturing();
    if (a.capturing) return nccl(R::CapturedInGroup);
    return to(Route::Hold, R::Taken);
  }
  // Every rank captures the same calls, so `capturing` is every rank's answer. Making the part
  // allocates, which a capture forbids.
  a.capturing = probes.capturing();
  if (!f.part_attempted && a.capturing) return nccl(R::CapturedBeforeMade);
  // Asked of the first call too: every rank must know before the ranks agree to make the part.
  a.fit = probes.buffers();
  if (!f.part_attempted) return to(Route::Make, R::Taken);
  if (a.fit == BufferFit::Unusable) return nccl(R::GpuRefuses);
  if (a.fit == BufferFit::Staged && a.capturing) return nccl(R::StagedCaptured);
  if (a.fit == BufferFit::Staged) return to(Route::Staged, R::Taken);
  return to(a.capturing ? Route::Captured : Route::Split, R::Taken);
}

const char* reason_text(AdmissionReason reason) {
  switch (reason) {
    case AdmissionReason::NotSplittable: return "braid has no split for this collective";
    case AdmissionReason::InvalidType: return "a data type NCCL refuses";
    case AdmissionReason::CommUnknown: return "braid does not know the communicator's rank, size or GPU";
    case AdmissionReason::OneRank: return "one rank";
    case AdmissionReason::NonBlocking: return "a non-blocking communicator";
    case AdmissionReason::Revoked: return "a revoked communicator";
    case AdmissionReason::SizeOverflow: return "the message's bytes overflow";
    case AdmissionReason::BelowFirstSize: return "below the size that makes braid's part";
    case AdmissionReason::PartDeclined: return "braid's part was not made on this communicator";
    case AdmissionReason::PreMulSum: return "PreMulSum (each rank's scalar is needed before the ranks meet)";
    case AdmissionReason::BelowSplitSize: return "below the sizes braid's paths take";
    case AdmissionReason::GroupHoldingOff: return "inside an NCCL group (BRAID_SPLIT_GROUPS=0)";
    case AdmissionReason::GroupNotWorthHolding: return "inside an NCCL group (holding it back pays only for 2-rank AllReduce/AllGather)";
    case AdmissionReason::GroupNotDeferring: return "inside an NCCL group that handed an operation to NCCL";
    case AdmissionReason::CapturedInGroup: return "inside an NCCL group, captured in a CUDA graph";
    case AdmissionReason::CapturedBeforeMade: return "captured in a CUDA graph (or on a stream CUDA cannot describe) before braid's part was made";
    case AdmissionReason::GpuRefuses: return "the communicator's error, FP8 below sm90, or buffers not on its GPU";
    case AdmissionReason::StagedCaptured: return "buffers that need staging, captured in a CUDA graph";
    case AdmissionReason::Taken: return "taken by braid's paths";
  }
  return "?";
}

const char* route_name(Route route) {
  switch (route) {
    case Route::Nccl: return "nccl";
    case Route::Hold: return "hold";
    case Route::Make: return "make";
    case Route::Split: return "split";
    case Route::Staged: return "staged";
    case Route::Captured: return "captured";
  }
  return "?";
}

}  // namespace braid::multipath
