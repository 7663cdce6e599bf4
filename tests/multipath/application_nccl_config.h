// An application's ncclConfig_t with every field it may set set away from NCCL's default, and the
// checks that a config carries those values (nccl_config_copy_nccl.cpp, lane_comm_config_nccl.cpp).
#pragma once

#include <gtest/gtest.h>
#include <nccl.h>

namespace braid::multipath {

inline ncclConfig_t application_config(const char* net_name, const char* comm_name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.cgaClusterSize = 2;
  config.minCTAs = 4;
  config.maxCTAs = 16;
  config.netName = net_name;
  config.splitShare = 1;
  config.trafficClass = 3;
  config.commName = comm_name;
  config.collnetEnable = 1;
  config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  config.shrinkShare = 1;
  config.nvlsCTAs = 8;
  config.nChannelsPerNetPeer = 2;
  config.nvlinkCentricSched = 1;
  return config;
}

// application_config's fields between blocking and netName (nccl.h 2.17 ended with netName).
inline void expect_application_ctas(const ncclConfig_t& config) {
  EXPECT_EQ(config.cgaClusterSize, 2);
  EXPECT_EQ(config.minCTAs, 4);
  EXPECT_EQ(config.maxCTAs, 16);
}

// application_config's fields after netName that braid never overrides.
inline void expect_application_later_fields(const ncclConfig_t& config) {
  EXPECT_EQ(config.trafficClass, 3);
  EXPECT_EQ(config.collnetEnable, 1);
  EXPECT_EQ(config.CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  EXPECT_EQ(config.shrinkShare, 1);
  EXPECT_EQ(config.nvlsCTAs, 8);
  EXPECT_EQ(config.nChannelsPerNetPeer, 2);
  EXPECT_EQ(config.nvlinkCentricSched, 1);
}

}  // namespace braid::multipath
