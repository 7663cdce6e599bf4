#include "multipath/split_trace.h"

#include "common/log.h"
#include "common/types.h"

namespace braid::multipath {

SplitTrace::~SplitTrace() {
  if (file_ != nullptr) std::fclose(file_);
}

void SplitTrace::open(const std::string& path) {
  if (path.empty() || file_ != nullptr) return;
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) BRAID_WARN(Balance, "multipath: cannot write the split trace %s", path.c_str());
}

void SplitTrace::declined(const nccl::Call& call, int nranks, const char* reason) {
  if (file_ == nullptr) return;
  std::fprintf(file_, "{\"declined\": \"%s\", \"collective\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"count\": %zu}\n",
               reason, std::string(collective_name(call.collective())).c_str(),
               std::string(datatype_name(static_cast<DataType>(call.type))).c_str(), message_bytes(call, nranks),
               call.count);
  std::fflush(file_);
}

void SplitTrace::settled(const SplitRecord& r) {
  if (file_ == nullptr) return;
  std::fprintf(file_,
               "{\"call\": %llu, \"collective\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
               "\"nccl_elements\": %zu, \"pcie_elements\": %zu, \"pcie_share\": %.6f, \"nccl_ms\": %.4f, "
               "\"pcie_ms\": %.4f, \"timed\": %s, \"next_pcie_share\": %.6f, \"nvlink_path\": \"%s\", "
               "\"caller_us\": %.1f}\n",
               static_cast<unsigned long long>(r.call), std::string(collective_name(r.what.collective())).c_str(),
               std::string(datatype_name(static_cast<DataType>(r.what.type))).c_str(), r.bytes, r.what.count,
               r.nccl_elements, r.pcie_elements,
               r.what.count ? static_cast<double>(r.pcie_elements) / static_cast<double>(r.what.count) : 0.0,
               r.nccl_seconds * 1e3, r.pcie_seconds * 1e3, r.timed ? "true" : "false", r.next_pcie_share,
               r.nvlink_copy ? "copy" : "nccl", r.caller_seconds * 1e6);
  std::fflush(file_);
}

}  // namespace braid::multipath
