// The config braid records per communicator (shim/comm_config.h), which the communicator braid's
// progress thread splits from it inherits: as given, or for a split or shrink without one, the
// parent's, as NCCL does. Compiled in directly (libbraid.so hides it); nccl.h, no GPU.
#include "shim/comm_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace braid::shim {
namespace {

// Distinct fake handles: the table never dereferences a communicator.
ncclComm* fake_comm(uintptr_t n) { return reinterpret_cast<ncclComm*>(0x1000 + 16 * n); }

ncclConfig_t configured(int cga_cluster_size, int max_ctas, const char* net_name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.cgaClusterSize = cga_cluster_size;
  config.maxCTAs = max_ctas;
  config.netName = net_name;
  return config;
}

CommState with_config(std::shared_ptr<const multipath::NcclConfigCopy> config) {
  CommState state{0, 2, 0, true, nullptr};
  state.config = std::move(config);
  return state;
}

TEST(ShimCommConfig, AGivenConfigIsRecordedAsGiven) {
  auto net_name = std::make_unique<std::string>("IB");
  const ncclConfig_t given = configured(4, 8, net_name->c_str());
  const auto recorded = config_to_record(&given, nullptr);
  net_name.reset();  // the application's string, freed once NCCL returned
  ASSERT_NE(recorded, nullptr);
  EXPECT_EQ(recorded->config().cgaClusterSize, 4);
  EXPECT_EQ(recorded->config().maxCTAs, 8);
  EXPECT_STREQ(recorded->config().netName, "IB");
}

TEST(ShimCommConfig, NoConfigAtInitRecordsNothing) {
  EXPECT_EQ(config_to_record(nullptr, nullptr), nullptr);
}

TEST(ShimCommConfig, ASplitWithoutConfigInheritsTheParentsRecord) {
  CommTable table;
  const ncclConfig_t parent_config = configured(2, 16, "Socket");
  table.insert(fake_comm(1), with_config(config_to_record(&parent_config, nullptr)));
  const std::optional<CommState> parent = table.find(fake_comm(1));
  ASSERT_TRUE(parent.has_value());
  const auto child = config_to_record(nullptr, &*parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child, table.find(fake_comm(1))->config);
  // The parent destroyed: the child's record stands on its own.
  table.erase(fake_comm(1));
  EXPECT_EQ(child->config().cgaClusterSize, 2);
  EXPECT_EQ(child->config().maxCTAs, 16);
  EXPECT_STREQ(child->config().netName, "Socket");
}

TEST(ShimCommConfig, ASplitWithAConfigTakesItOverTheParents) {
  const ncclConfig_t parent_config = configured(2, 16, "Socket");
  const CommState parent = with_config(config_to_record(&parent_config, nullptr));
  const ncclConfig_t given = configured(NCCL_CONFIG_UNDEF_INT, 4, nullptr);
  const auto child = config_to_record(&given, &parent);
  ASSERT_NE(child, nullptr);
  // NCCL fills what the split's config leaves unset with its defaults, not with the parent's.
  EXPECT_EQ(child->config().cgaClusterSize, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(child->config().maxCTAs, 4);
  EXPECT_EQ(child->config().netName, nullptr);
}

TEST(ShimCommConfig, ASplitOfACommunicatorWithoutRecordInheritsNothing) {
  const CommState init_ranks{0, 2, 0, true, nullptr};  // ncclCommInitRank's
  EXPECT_EQ(config_to_record(nullptr, &init_ranks), nullptr);
  EXPECT_EQ(config_to_record(nullptr, nullptr), nullptr);  // not braid's to know
}

TEST(ShimCommConfig, BlockingIsNcclsDefaultUnlessTheConfigSaysOtherwise) {
  const ncclConfig_t unset = NCCL_CONFIG_INITIALIZER;
  ncclConfig_t non_blocking = NCCL_CONFIG_INITIALIZER;
  non_blocking.blocking = 0;
  EXPECT_TRUE(made_blocking(nullptr, nullptr, nullptr));  // ncclCommInitRank, ncclCommInitAll
  EXPECT_TRUE(made_blocking(&unset, nullptr, nullptr));
  EXPECT_FALSE(made_blocking(&non_blocking, nullptr, nullptr));
}

TEST(ShimCommConfig, ASplitWithoutConfigBlocksAsItsParentAndWithOneAsTheConfigSays) {
  CommState parent{0, 2, 0, false, nullptr};  // made non-blocking
  const ncclConfig_t unset = NCCL_CONFIG_INITIALIZER;
  EXPECT_FALSE(made_blocking(nullptr, &parent, nullptr));
  // NCCL gives a config's unset field its default, not the parent's.
  EXPECT_TRUE(made_blocking(&unset, &parent, nullptr));
}

TEST(ShimCommConfig, NcclCommBlockingOverridesEveryConfig) {
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  CommState parent{0, 2, 0, true, nullptr};
  EXPECT_FALSE(made_blocking(nullptr, nullptr, "0"));
  EXPECT_FALSE(made_blocking(&blocking, nullptr, "0"));
  EXPECT_FALSE(made_blocking(nullptr, &parent, "0"));
  ncclConfig_t non_blocking = NCCL_CONFIG_INITIALIZER;
  non_blocking.blocking = 0;
  EXPECT_TRUE(made_blocking(&non_blocking, nullptr, "1"));
  // NCCL ignores a value other than 0 or 1, and so does braid.
  EXPECT_FALSE(made_blocking(&non_blocking, nullptr, "2"));
  EXPECT_FALSE(made_blocking(&non_blocking, nullptr, ""));
  EXPECT_FALSE(made_blocking(&non_blocking, nullptr, "yes"));
}

}  // namespace
}  // namespace braid::shim
