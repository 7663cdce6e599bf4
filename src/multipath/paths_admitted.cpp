#include "multipath/paths_admitted.h"

#include <algorithm>
#include <cstdint>

namespace braid::multipath {

namespace {

PathRefusal copy_engines_refusal(const PathFacts& facts) {
  if (facts.nranks < 2) return PathRefusal::OneRank;
  if (facts.nvlink_path == "nccl") return PathRefusal::NcclChosen;
  if (facts.nvlink_path == "copy") return PathRefusal::None;  // asked for anywhere peer access works
  if (facts.nranks != 2) return PathRefusal::NotTwoRanks;
  return facts.nvlink ? PathRefusal::None : PathRefusal::NoNvlink;
}

PathRefusal pcie_share_refusal(const PathFacts& facts) {
  if (facts.nranks < 2) return PathRefusal::OneRank;
  if (facts.nvlink && facts.nranks > 2 && !facts.split_size_chosen) return PathRefusal::NoGainMeasured;
  return PathRefusal::None;
}

}  // namespace

PathsAdmitted admit_paths(const PathFacts& facts) {
  return PathsAdmitted{.copy_engines = copy_engines_refusal(facts), .pcie_share = pcie_share_refusal(facts)};
}

PathsAdmitted combined(const PathsAdmitted& a, const PathsAdmitted& b) {
  return PathsAdmitted{.copy_engines = std::max(a.copy_engines, b.copy_engines),
                       .pcie_share = std::max(a.pcie_share, b.pcie_share)};
}

size_t copy_engines_from(const PathThresholds& thresholds, Collective collective) {
  // braid's own NVLink path carries AllGathers and AllReduces; NCCL the rest.
  if (collective == Collective::AllGather) return std::max<size_t>(1, thresholds.copy_engines_gather);
  if (collective == Collective::AllReduce) return std::max<size_t>(1, thresholds.copy_engines_reduce);
  return 0;
}

bool takes(const PathsAdmitted& paths, const PathThresholds& thresholds, Collective collective, size_t bytes) {
  if (paths.pcie_share_admitted() && bytes >= thresholds.pcie_share) return true;
  if (!paths.copy_engines_admitted()) return false;
  const size_t from = copy_engines_from(thresholds, collective);
  return from > 0 && bytes >= from;
}

PathsAdmitted made_at(const PathsAdmitted& paths, const PathThresholds& thresholds, size_t bytes) {
  PathsAdmitted made = paths;
  if (made.pcie_share_admitted() && bytes < thresholds.pcie_share) made.pcie_share = PathRefusal::FirstCallSmall;
  return made;
}

std::array<int32_t, 2> encode(const PathsAdmitted& paths) {
  return {static_cast<int32_t>(paths.copy_engines), static_cast<int32_t>(paths.pcie_share)};
}

PathsAdmitted decode(const std::array<int32_t, 2>& words) {
  const auto refusal = [](int32_t w) {
    return w < 0 || w > static_cast<int32_t>(PathRefusal::FirstCallSmall) ? PathRefusal::OneRank : static_cast<PathRefusal>(w);
  };
  return PathsAdmitted{.copy_engines = refusal(words[0]), .pcie_share = refusal(words[1])};
}

std::string_view refusal_text(PathRefusal why) {
  switch (why) {
    case PathRefusal::None: return "admitted";
    case PathRefusal::OneRank: return "the communicator has one rank";
    case PathRefusal::NcclChosen: return "BRAID_NVLINK_PATH=nccl";
    case PathRefusal::NotTwoRanks:
      return "more than two ranks (at four, braid's copy engines lost to NCCL's kernels; BRAID_NVLINK_PATH=copy "
             "forces them)";
    case PathRefusal::NoNvlink: return "the GPUs share no NVLink";
    case PathRefusal::FirstCallSmall:
      return "the first call braid took was below the PCIe share's size (its engine's pinned staging, scratch and "
             "threads are paid only where its first call uses them; BRAID_SPLIT_MIN_BYTES lowers the size)";
    case PathRefusal::NoGainMeasured:
      return "more than two ranks on NVLink (on 4x H200 the PCIe share settled at 0-4% of the bytes for 0.99-1.00x "
             "NCCL; BRAID_SPLIT_MIN_BYTES turns it on)";
  }
  return "unknown";
}

std::string describe(const PathsAdmitted& paths) {
  std::string text = "braid's copy-engine NVLink path ";
  text += paths.copy_engines_admitted() ? "on" : "off (" + std::string(refusal_text(paths.copy_engines)) + ")";
  text += ", braid's PCIe share ";
  text += paths.pcie_share_admitted() ? "on" : "off (" + std::string(refusal_text(paths.pcie_share)) + ")";
  return text;
}

}  // namespace braid::multipath
