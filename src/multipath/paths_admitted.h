// Which of braid's own paths a communicator may use, decided once per communicator before braid
// pays for any of them (docs/MULTIPATH.md, "What a communicator costs").
//
// braid's copy-engine NVLink path (src/peer/) runs where it was measured to pay: two ranks whose
// GPUs share NVLink, unless BRAID_NVLINK_PATH says otherwise. braid's PCIe share runs where it
// was measured to pay: GPUs without NVLink (HyLink's machines), and two ranks on NVLink; at four
// ranks on NVLink it settled at 0-4% of the bytes for 0.99-1.00x NCCL, so it is off there unless
// the user sets BRAID_SPLIT_MIN_BYTES. Its GPU work is queued by the calling thread, so neither
// lazy module loading nor CUDA_DEVICE_MAX_CONNECTIONS limits it. Where neither path may run, braid
// makes nothing for the communicator: no engine, no staging, no thread; its calls go straight to
// NCCL.
//
// Each rank decides for itself (admit_paths); the ranks then keep what every rank admits
// (agreed_paths), so that no rank splits a call another leaves to NCCL.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/types.h"

namespace braid::multipath {

// What one rank knows of its communicator and process.
struct PathFacts {
  int nranks = 1;
  bool nvlink = false;                // the machine's GPUs are joined by NVLink
  std::string_view nvlink_path = "auto";  // BRAID_NVLINK_PATH: auto, copy or nccl
  bool split_size_chosen = false;     // BRAID_SPLIT_MIN_BYTES set: the user asks for PCIe shares
};

// Why a path is not admitted (0: it is). Ordered: agreement keeps the largest reason any rank gave.
enum class PathRefusal : uint32_t {
  None = 0,
  OneRank = 1,          // nothing to split among one rank
  NcclChosen = 2,       // BRAID_NVLINK_PATH=nccl
  NotTwoRanks = 3,      // copy engines: auto takes them at two ranks only (they lost at four)
  NoNvlink = 4,         // copy engines: auto takes them where GPUs share NVLink only
  NoGainMeasured = 5,   // PCIe share: more than two ranks on NVLink, where it did not pay
  FirstCallSmall = 6,   // PCIe share: the call that made braid's part was below its size (made_at)
};

struct PathsAdmitted {
  PathRefusal copy_engines = PathRefusal::OneRank;  // braid's copy-engine NVLink path
  PathRefusal pcie_share = PathRefusal::OneRank;    // braid's PCIe share
  bool copy_engines_admitted() const { return copy_engines == PathRefusal::None; }
  bool pcie_share_admitted() const { return pcie_share == PathRefusal::None; }
  bool any() const { return copy_engines_admitted() || pcie_share_admitted(); }
};

// This rank's answer.
PathsAdmitted admit_paths(const PathFacts& facts);

// Two ranks' answers combined: a path runs where both admit it, and the reason kept is the larger.
// Every rank's answer is the element-wise maximum of the encoded words (an NCCL max all-reduce).
PathsAdmitted combined(const PathsAdmitted& a, const PathsAdmitted& b);
std::array<int32_t, 2> encode(const PathsAdmitted& paths);
PathsAdmitted decode(const std::array<int32_t, 2>& words);

// The sizes (bytes of a call's message) from which each path takes a call.
struct PathThresholds {
  size_t pcie_share = 0;             // BRAID_SPLIT_MIN_BYTES as resolved
  size_t copy_engines_gather = 0;    // BRAID_NVLINK_COPY_MIN_BYTES (AllGather)
  size_t copy_engines_reduce = 0;    // BRAID_NVLINK_ALLREDUCE_MIN_BYTES (AllReduce)
};
// The size from which braid's copy-engine path takes `collective` where it is admitted; 0 for a
// collective it never carries (NCCL carries that one's NVLink share).
size_t copy_engines_from(const PathThresholds& thresholds, Collective collective);
// Whether an admitted path would take a call of `collective` and `bytes`: braid makes its part of
// a communicator at the first such call, not before (every rank makes the same calls).
bool takes(const PathsAdmitted& paths, const PathThresholds& thresholds, Collective collective, size_t bytes);
// The paths braid makes its part with, at the call of `bytes` that makes it: where the copy engines
// alone take that first call (an FSDP all_gather of 16 MB), the communicator keeps to them; where
// the first call is one the PCIe share takes, both run (the PCIe share's engine is made at its first
// call with PCIe elements). The same on every rank (every rank makes the same calls).
PathsAdmitted made_at(const PathsAdmitted& paths, const PathThresholds& thresholds, size_t bytes);

// "braid's PCIe share off (more than two ranks on NVLink ...)": one line for logs and traces.
std::string describe(const PathsAdmitted& paths);
std::string_view refusal_text(PathRefusal why);

}  // namespace braid::multipath
