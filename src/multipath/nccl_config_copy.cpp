#include "multipath/nccl_config_copy.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace braid::multipath {

namespace {

// NCCL_CONFIG_INITIALIZER's mark, which NCCL checks before it reads anything else.
constexpr unsigned int kConfigMagic = 0xcafebeef;

// The bytes NCCL reads of `given`: what its own nccl.h said, at most ours.
size_t bytes_given(const ncclConfig_t& given) { return std::min(given.size, sizeof(ncclConfig_t)); }

}  // namespace

std::shared_ptr<const NcclConfigCopy> NcclConfigCopy::of(const ncclConfig_t* given) {
  if (given == nullptr || bytes_given(*given) < offsetof(ncclConfig_t, blocking) || given->magic != kConfigMagic)
    return nullptr;
  return std::make_shared<const NcclConfigCopy>(*given);
}

NcclConfigCopy::NcclConfigCopy(const ncclConfig_t& given) {
  std::memcpy(&config_, &given, bytes_given(given));
  // Fields past the application's struct kept NCCL_CONFIG_INITIALIZER's "unset"; the header says
  // what this struct is now.
  const ncclConfig_t ours = NCCL_CONFIG_INITIALIZER;
  config_.size = ours.size;
  config_.magic = ours.magic;
  config_.version = ours.version;
  // Every string field of ncclConfig_t (nccl.h 2.28): a newer header's must be added here.
  own(&config_.netName, &net_name_);
  own(&config_.commName, &comm_name_);
}

void NcclConfigCopy::own(const char** field, std::string* storage) {
  if (*field == nullptr) return;
  *storage = *field;
  *field = storage->c_str();
}

}  // namespace braid::multipath
