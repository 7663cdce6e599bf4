// The application's ncclConfig_t as braid keeps it (multipath/nccl_config_copy.h): read by the size
// the application's nccl.h gave it, its strings owned. Needs nccl.h, no GPU.
#include "multipath/nccl_config_copy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "application_nccl_config.h"

namespace braid::multipath {
namespace {

// `config`'s first `bytes` in a heap block of exactly that size, as an application built against an
// older nccl.h passes it (`size` says so).
std::unique_ptr<unsigned char[]> as_older_header(ncclConfig_t config, size_t bytes) {
  config.size = bytes;
  auto block = std::make_unique<unsigned char[]>(bytes);
  std::memcpy(block.get(), &config, bytes);
  return block;
}

TEST(MultipathNcclConfigCopy, NothingForNoConfigOrOneNcclRefuses) {
  EXPECT_EQ(NcclConfigCopy::of(nullptr), nullptr);
  ncclConfig_t unmarked = NCCL_CONFIG_INITIALIZER;
  unmarked.magic = 0;
  EXPECT_EQ(NcclConfigCopy::of(&unmarked), nullptr);
  ncclConfig_t too_small = NCCL_CONFIG_INITIALIZER;
  too_small.size = sizeof(size_t);
  EXPECT_EQ(NcclConfigCopy::of(&too_small), nullptr);
}

TEST(MultipathNcclConfigCopy, CopiesEveryFieldOfAFullConfig) {
  const ncclConfig_t given = application_config("IB", "trainer");
  const auto copy = NcclConfigCopy::of(&given);
  ASSERT_NE(copy, nullptr);
  const ncclConfig_t& kept = copy->config();
  EXPECT_EQ(kept.blocking, 0);
  expect_application_ctas(kept);
  EXPECT_STREQ(kept.netName, "IB");
  EXPECT_EQ(kept.splitShare, 1);
  EXPECT_STREQ(kept.commName, "trainer");
  expect_application_later_fields(kept);
}

TEST(MultipathNcclConfigCopy, AnOlderHeadersConfigIsCopiedOnlyUpToItsSize) {
  // nccl.h 2.17's ncclConfig_t ended after netName; the rest must be this header's defaults, not
  // whatever follows the application's struct in its memory.
  const ncclConfig_t unset = NCCL_CONFIG_INITIALIZER;
  ncclConfig_t full = application_config("Socket", "trainer");
  full.version = NCCL_VERSION(2, 17, 0);
  const auto older = as_older_header(full, offsetof(ncclConfig_t, splitShare));
  const auto copy = NcclConfigCopy::of(reinterpret_cast<const ncclConfig_t*>(older.get()));
  ASSERT_NE(copy, nullptr);
  const ncclConfig_t& kept = copy->config();
  EXPECT_EQ(kept.blocking, 0);
  expect_application_ctas(kept);
  EXPECT_STREQ(kept.netName, "Socket");
  // From splitShare on, nothing of the application's.
  EXPECT_EQ(std::memcmp(&kept.splitShare, &unset.splitShare, sizeof(ncclConfig_t) - offsetof(ncclConfig_t, splitShare)),
            0);
  // Described as this header's struct now.
  EXPECT_EQ(kept.size, sizeof(ncclConfig_t));
  EXPECT_EQ(kept.magic, unset.magic);
  EXPECT_EQ(kept.version, unset.version);
}

TEST(MultipathNcclConfigCopy, ANewerHeadersLargerConfigIsCopiedUpToOurs) {
  struct Newer {
    ncclConfig_t ours;
    int field_we_do_not_know;
  };
  Newer given{application_config("IB", nullptr), 7};
  given.ours.size = sizeof(Newer);
  const auto copy = NcclConfigCopy::of(&given.ours);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->config().size, sizeof(ncclConfig_t));
  EXPECT_STREQ(copy->config().netName, "IB");
  expect_application_later_fields(copy->config());
}

TEST(MultipathNcclConfigCopy, StringsOutliveTheApplications) {
  auto net_name = std::make_unique<std::string>("IB-rail-1");
  auto comm_name = std::make_unique<std::string>("data-parallel group 3");
  auto given = std::make_unique<ncclConfig_t>(application_config(net_name->c_str(), comm_name->c_str()));
  const auto copy = NcclConfigCopy::of(given.get());
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(copy->config().netName, net_name->c_str());
  EXPECT_NE(copy->config().commName, comm_name->c_str());
  // The application overwrites and frees its config and its strings once NCCL returned.
  net_name->assign(net_name->size(), 'x');
  comm_name->assign(comm_name->size(), 'x');
  net_name.reset();
  comm_name.reset();
  std::memset(static_cast<void*>(given.get()), 0, sizeof(ncclConfig_t));
  given.reset();
  EXPECT_STREQ(copy->config().netName, "IB-rail-1");
  EXPECT_STREQ(copy->config().commName, "data-parallel group 3");
  expect_application_ctas(copy->config());
}

TEST(MultipathNcclConfigCopy, UnsetStringsStayUnset) {
  const ncclConfig_t given = NCCL_CONFIG_INITIALIZER;
  const auto copy = NcclConfigCopy::of(&given);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->config().netName, nullptr);
  EXPECT_EQ(copy->config().commName, nullptr);
  EXPECT_EQ(std::memcmp(&copy->config(), &given, sizeof given), 0);
}

}  // namespace
}  // namespace braid::multipath
