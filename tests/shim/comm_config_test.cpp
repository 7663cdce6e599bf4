// Whether NCCL makes a communicator blocking, as braid records it (shim/comm_config.h): from the
// call's config, or for a split or shrink without one, the parent's, as NCCL does. Compiled in
// directly (libbraid.so hides it); nccl.h, no GPU.
#include "shim/comm_config.h"

#include <gtest/gtest.h>

namespace braid::shim {
namespace {

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
