// The flow-level model of FuseLink's NIC choice (net/fuselink_model.h) on FuseLink's testbed
// (fuselink-2x8: 8 GPUs and 8 NICs of 50 GB/s per server, NVLink 200 GB/s per GPU).
#include "net/fuselink_model.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace braid::net {
namespace {

constexpr double kBytes = 1e9;
constexpr double kNic = 50e9;  // bytes/s

class FuseLinkModelTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(topo::load_topology("fuselink-2x8", &topo_), Result::Success) << last_error(); }

  ModelResult run(const std::vector<ModelRequest>& reqs, NicPolicy policy, FuseLinkModelOptions o = {}) {
    ModelResult r;
    EXPECT_EQ(simulate_fuselink(topo_, reqs, policy, o, &r), Result::Success) << last_error();
    return r;
  }

  // GPU i's NVLink to the NVSwitch, both ways, at `gbps`.
  void set_nvlink(int server, int gpu, double gbps) {
    int seen = 0;
    for (topo::Link& l : topo_.links) {
      const topo::Node& a = topo_.nodes[size_t(l.a)];
      if (l.kind == topo::LinkKind::NvLink && a.kind == topo::NodeKind::Gpu && a.server == server && seen++ == gpu)
        l.gbps_ab = l.gbps_ba = gbps;
    }
  }

  topo::Topology topo_;
};

std::vector<ModelRequest> each_gpu(int gpus, double bytes) {
  std::vector<ModelRequest> reqs;
  for (int g = 0; g < gpus; ++g) reqs.push_back({g, {g}, bytes, 0});
  return reqs;
}

TEST_F(FuseLinkModelTest, OneNicPerGpuRunsAtTheNicRate) {
  const ModelResult r = run({{0, {0}, kBytes, 0}}, NicPolicy::Direct);
  EXPECT_NEAR(r.makespan_s, kBytes / kNic, 1e-6);
  EXPECT_EQ(r.max_nics_used, 1);
}

TEST_F(FuseLinkModelTest, BalancedTrafficGainsNothing) {
  const auto reqs = each_gpu(8, kBytes);
  const ModelResult d = run(reqs, NicPolicy::Direct), f = run(reqs, NicPolicy::FuseLink);
  EXPECT_NEAR(f.makespan_s, d.makespan_s, 1e-9);
  EXPECT_EQ(f.max_nics_used, 1);  // every NIC has its owner busy: no relay at all
}

TEST_F(FuseLinkModelTest, OneHotGpuGainsUpToItsNicsBoundedByNvlink) {
  const std::vector<ModelRequest> one{{0, {0}, kBytes, 0}};
  for (double e : {1.0, 0.81}) {
    for (int nics = 1; nics <= 8; ++nics) {
      FuseLinkModelOptions o;
      o.nics_per_server = nics;
      o.relay_efficiency = e;
      const double gain = run(one, NicPolicy::Direct, o).makespan_s / run(one, NicPolicy::FuseLink, o).makespan_s;
      // Direct NIC + the idle ones, the relayed part at most NVLink's 200 GB/s times the efficiency.
      const double expected = std::min(double(nics), (50 + 200 * e) / 50);
      EXPECT_NEAR(gain, expected, 0.01 * expected) << nics << " NICs, efficiency " << e;
      EXPECT_LE(gain, nics + 1e-9);
    }
  }
  // The paper's point: 6 NICs carry 212 GB/s at the default efficiency.
  FuseLinkModelOptions six;
  six.nics_per_server = 6;
  EXPECT_NEAR(kBytes / run(one, NicPolicy::FuseLink, six).makespan_s / 1e9, 212, 1);
}

TEST_F(FuseLinkModelTest, ANarrowerNvlinkBoundsTheRelays) {
  set_nvlink(0, 0, 60);  // the sender's NVLink only
  FuseLinkModelOptions o;
  o.relay_efficiency = 1;
  const ModelResult f = run({{0, {0}, kBytes, 0}}, NicPolicy::FuseLink, o);
  EXPECT_NEAR(kBytes / f.makespan_s / 1e9, 50 + 60, 0.5);
  set_nvlink(1, 0, 30);  // and the receiver's, narrower still
  EXPECT_NEAR(kBytes / run({{0, {0}, kBytes, 0}}, NicPolicy::FuseLink, o).makespan_s / 1e9, 50 + 30, 0.5);
}

TEST_F(FuseLinkModelTest, HotGpusShareTheIdleNicsAndNeverExceedAllNics) {
  FuseLinkModelOptions o;
  o.relay_efficiency = 1;
  for (int hot = 1; hot <= 8; ++hot) {
    const auto reqs = each_gpu(hot, kBytes);
    const ModelResult d = run(reqs, NicPolicy::Direct, o), f = run(reqs, NicPolicy::FuseLink, o);
    const double gain = d.makespan_s / f.makespan_s;
    EXPECT_GE(gain, 1 - 1e-9) << hot;
    EXPECT_LE(hot * kBytes / f.makespan_s, 8 * kNic * (1 + 1e-9)) << hot;  // the NICs' sum
    EXPECT_NEAR(gain, std::min(8.0 / hot, 5.0), 0.01 * gain) << hot;       // NVLink: 50 + 200 per GPU
  }
}

TEST_F(FuseLinkModelTest, AnOwnerTakesItsNicBack) {
  // GPU 0 moves 10 GB over every NIC; GPU 1 starts 20 ms later with 0.5 GB: GPU 0 leaves NIC 1
  // at once, and GPU 1 gets its whole NIC plus half of the 6 idle ones (200 GB/s, under NVLink's
  // 162 of relay), as if both had started together.
  const std::vector<ModelRequest> reqs{{0, {0}, 10 * kBytes, 0}, {1, {1}, 0.5 * kBytes, 0.02}};
  const ModelResult f = run(reqs, NicPolicy::FuseLink);
  EXPECT_NEAR(f.finish_s[1] - 0.02, 0.5 * kBytes / (kNic + 3 * kNic), 1e-6);
  EXPECT_LT(f.finish_s[0], run(reqs, NicPolicy::Direct).finish_s[0]);
}

TEST_F(FuseLinkModelTest, OneQueueRunsItsRequestsInTurn) {
  const std::vector<ModelRequest> reqs{{0, {0}, kBytes, 0}, {0, {0}, kBytes, 0}};
  const ModelResult d = run(reqs, NicPolicy::Direct);
  EXPECT_NEAR(d.finish_s[0], kBytes / kNic, 1e-6);
  EXPECT_NEAR(d.finish_s[1], 2 * kBytes / kNic, 1e-6);
}

TEST_F(FuseLinkModelTest, RefusesWhatItCannotModel) {
  ModelResult r;
  EXPECT_NE(simulate_fuselink(topo_, {{0, {8}, kBytes, 0}}, NicPolicy::Direct, {}, &r), Result::Success);
  FuseLinkModelOptions two;
  two.nics_per_server = 2;  // GPU 5 then has no NIC of its own
  EXPECT_NE(simulate_fuselink(topo_, {{0, {5}, kBytes, 0}}, NicPolicy::Direct, two, &r), Result::Success);
  FuseLinkModelOptions bad;
  bad.relay_efficiency = 0;
  EXPECT_NE(simulate_fuselink(topo_, {{0, {0}, kBytes, 0}}, NicPolicy::FuseLink, bad, &r), Result::Success);
}

}  // namespace
}  // namespace braid::net
