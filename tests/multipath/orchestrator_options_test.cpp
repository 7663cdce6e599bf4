// The settings an orchestrator runs by are read once, when it is made (multipath/orchestrator_options.h).
#include "multipath/orchestrator_options.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/settings.h"
#include "support/scoped_env.h"

namespace braid::multipath {
namespace {

using test::ScopedEnv;

TEST(OrchestratorOptions, DefaultsAreTheSettingsTables) {
  const OrchestratorOptions o = OrchestratorOptions::from_settings();
  EXPECT_FALSE(o.nccl_share_by_copy);
  EXPECT_EQ(o.nvlink_path, "auto");
  EXPECT_TRUE(o.async);
  EXPECT_EQ(o.settle_lag, 256u);
  EXPECT_EQ(o.nvlink_copy_min_bytes, size_t{16} << 20);
  EXPECT_EQ(o.nvlink_allreduce_min_bytes, size_t{128} << 20);
  EXPECT_EQ(o.nvlink_graph_min_bytes, size_t{64} << 20);
}

TEST(OrchestratorOptions, ThePcieShareTakesCallsFromTheMachinesSizeUnlessChosen) {
  EXPECT_EQ(OrchestratorOptions::from_settings().pcie_share_min_bytes(true), size_t{128} << 20);
  EXPECT_EQ(OrchestratorOptions::from_settings().pcie_share_min_bytes(false), size_t{1} << 20);
  ScopedEnv chosen("BRAID_SPLIT_MIN_BYTES", "4096");
  EXPECT_EQ(OrchestratorOptions::from_settings().pcie_share_min_bytes(true), 4096u);
  EXPECT_EQ(OrchestratorOptions::from_settings().pcie_share_min_bytes(false), 4096u);
}

TEST(OrchestratorOptions, GiveTheDropInsThresholdsAndFacts) {
  ScopedEnv copy("BRAID_NVLINK_PATH", "copy");
  ScopedEnv chosen("BRAID_SPLIT_MIN_BYTES", "4096");
  const OrchestratorOptions o = OrchestratorOptions::from_settings();
  const PathThresholds t = o.thresholds(true);
  EXPECT_EQ(t.pcie_share, 4096u);
  EXPECT_EQ(t.copy_engines_gather, size_t{16} << 20);
  EXPECT_EQ(t.copy_engines_reduce, size_t{128} << 20);
  const PathFacts f = o.facts(4, true);
  EXPECT_EQ(f.nranks, 4);
  EXPECT_TRUE(f.nvlink);
  EXPECT_EQ(f.nvlink_path, "copy");
  EXPECT_TRUE(f.split_size_chosen);
  EXPECT_TRUE(admit_paths(f).copy_engines_admitted());
}

TEST(OrchestratorOptions, WithoutTheProgressThreadNoLag) {
  ScopedEnv sync("BRAID_ASYNC", "0");
  ScopedEnv lag("BRAID_SPLIT_SETTLE_LAG", "32");
  const OrchestratorOptions o = OrchestratorOptions::from_settings();
  EXPECT_FALSE(o.async);
  EXPECT_EQ(o.settle_lag, 1u);
}

TEST(OrchestratorOptions, ReadOnceAndKept) {
  OrchestratorOptions made;
  {
    ScopedEnv copy("BRAID_SPLIT_NCCL_SHARE", "copy");
    ScopedEnv path("BRAID_NVLINK_PATH", "nccl");
    made = OrchestratorOptions::from_settings();
  }
  // The environment changed back; what was read stays.
  EXPECT_TRUE(made.nccl_share_by_copy);
  EXPECT_EQ(made.nvlink_path, "nccl");
  EXPECT_EQ(OrchestratorOptions::from_settings().nvlink_path, "auto");
}

}  // namespace
}  // namespace braid::multipath
