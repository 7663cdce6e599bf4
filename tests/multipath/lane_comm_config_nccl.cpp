// The config of the communicator braid's progress thread splits from the application's
// (multipath/lane_comm_config.h): the application's, with braid's overrides. Needs nccl.h, no GPU.
// The split itself (Orchestrator::make_lane_comm) needs a GPU: Orchestrator::create sets up CUDA
// streams and pinned memory before any lane exists.
#include "multipath/lane_comm_config.h"

#include <gtest/gtest.h>

#include <cstring>

#include "application_nccl_config.h"

namespace braid::multipath {
namespace {

// braid's thread waits for the split, the child runs beside its parent (nothing shared), and it
// goes by braid's name.
void expect_braids_overrides(const ncclConfig_t& lane) {
  EXPECT_EQ(lane.blocking, 1);
  EXPECT_EQ(lane.splitShare, 0);
  EXPECT_STREQ(lane.commName, kLaneCommName);
}

TEST(OrchestratorLaneCommConfig, WithoutTheApplicationsConfigNcclDefaultsTheRest) {
  ncclConfig_t expected = NCCL_CONFIG_INITIALIZER;
  ncclConfig_t lane = lane_comm_config(nullptr);
  expect_braids_overrides(lane);
  expected.blocking = lane.blocking;
  expected.splitShare = lane.splitShare;
  expected.commName = lane.commName;
  EXPECT_EQ(std::memcmp(&lane, &expected, sizeof lane), 0);
}

TEST(OrchestratorLaneCommConfig, InheritsTheApplicationsConfigWithBraidsOverrides) {
  const ncclConfig_t given = application_config("IB", "trainer");
  const auto application = NcclConfigCopy::of(&given);
  ASSERT_NE(application, nullptr);
  const ncclConfig_t lane = lane_comm_config(application.get());
  expect_braids_overrides(lane);
  expect_application_ctas(lane);
  EXPECT_EQ(lane.netName, application->config().netName);  // the kept copy's, not the application's
  expect_application_later_fields(lane);
  // The kept copy stays as the application gave it.
  EXPECT_EQ(application->config().blocking, 0);
  EXPECT_EQ(application->config().splitShare, 1);
  EXPECT_STREQ(application->config().commName, "trainer");
}

}  // namespace
}  // namespace braid::multipath
