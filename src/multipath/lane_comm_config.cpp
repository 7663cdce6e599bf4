#include "multipath/lane_comm_config.h"

namespace braid::multipath {

ncclConfig_t lane_comm_config(const NcclConfigCopy* application) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (application != nullptr) config = application->config();
  config.blocking = 1;
  config.splitShare = 0;
  config.commName = kLaneCommName;
  return config;
}

}  // namespace braid::multipath
