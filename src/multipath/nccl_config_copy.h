// An application's ncclConfig_t, kept past the call that passed it (the progress thread's NCCL
// communicator inherits it, lane_comm_config.h). Read as NCCL reads it (parseCommConfig,
// src/init.cc): an application built against an older nccl.h passes a smaller struct, so only its
// `size` bytes are copied, over NCCL_CONFIG_INITIALIZER; the strings it points to are the
// application's, which it may free once NCCL returns, so the copy holds its own.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

namespace braid::multipath {

class NcclConfigCopy {
 public:
  // Null for no config (NCCL's defaults) or one NCCL refuses (not made by NCCL_CONFIG_INITIALIZER,
  // or too small to say how it was made).
  static std::shared_ptr<const NcclConfigCopy> of(const ncclConfig_t* given);

  // This header's size, magic and version; strings point into this object, so it is neither
  // copied nor moved (a moved std::string may move its characters).
  const ncclConfig_t& config() const { return config_; }

  explicit NcclConfigCopy(const ncclConfig_t& given);
  NcclConfigCopy(const NcclConfigCopy&) = delete;
  NcclConfigCopy& operator=(const NcclConfigCopy&) = delete;

 private:
  // Points *field at an owned copy of its string (null stays null).
  void own(const char** field, std::string* storage);

  ncclConfig_t config_ = NCCL_CONFIG_INITIALIZER;
  std::string net_name_;
  std::string comm_name_;
};

}  // namespace braid::multipath
