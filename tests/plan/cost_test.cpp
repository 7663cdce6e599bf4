// The cost model: HyLink's Figure 1 counts, its time ordering, and choose_plan's consistency.
#include <gtest/gtest.h>

#include <cstdio>

#include "plan/cost.h"
#include "plan/generate.h"
#include "topo/topology.h"

namespace braid::plan {
namespace {

topo::Topology load(const std::string& name) {
  topo::Topology t;
  EXPECT_EQ(topo::load_topology(name, &t), Result::Success) << name;
  return t;
}

ProgramCost cost_of(Collective c, int ranks, const topo::Topology& t, GenerateOptions o, size_t count) {
  dsl::Program p;
  EXPECT_EQ(generate(c, ranks, t, o, &p), Result::Success);
  ProgramCost cost;
  EXPECT_EQ(estimate(p, t, count, DataType::Float32, CostOptions{}, &cost), Result::Success);
  return cost;
}

// HyLink Fig. 1(b)/(c): 4-GPU AllGather, one chunk per GPU, GPUs 0,1 on socket 0 and 2,3 on 1.
TEST(Cost, ReproducesHyLinkFigure1) {
  const topo::Topology t = load("hylink-3090x4");
  const size_t count = size_t{16} << 20;  // 64 MiB per GPU
  GenerateOptions o;
  o.chunks = 1;
  o.algorithm = GenerateOptions::Algorithm::Ring;
  const ProgramCost ring = cost_of(Collective::AllGather, 4, t, o, count);
  EXPECT_EQ(ring.uploads, 12);
  EXPECT_EQ(ring.uploads_per_gpu, (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(ring.inter_socket_crossings, 6);

  o.algorithm = GenerateOptions::Algorithm::Hierarchical;
  const ProgramCost hier = cost_of(Collective::AllGather, 4, t, o, count);
  EXPECT_EQ(hier.uploads, 4);
  EXPECT_EQ(hier.uploads_per_gpu, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(hier.inter_socket_crossings, 4);
  // Both download the 3 other GPUs' chunks.
  EXPECT_EQ(hier.downloads_per_gpu, (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(ring.downloads_per_gpu, (std::vector<int>{3, 3, 3, 3}));

  // Fewer uploads on the same PCIe links: the hierarchical program is faster.
  EXPECT_LT(hier.seconds, ring.seconds);
  // Ring: each GPU's upload direction carries 3 chunks of 64 MiB at 13 GB/s.
  const double chunk_bytes = static_cast<double>(count) * 4;
  EXPECT_NEAR(ring.transfer_seconds, 3 * chunk_bytes / 13e9, 1e-9);
  // Hierarchical: the download direction (3 chunks) is now the busiest.
  EXPECT_NEAR(hier.transfer_seconds, 3 * chunk_bytes / 13e9, 1e-9);
  EXPECT_GT(ring.critical_path, hier.critical_path);
}

TEST(Cost, CountsHostReductionAndCrossingsForAllReduce) {
  const topo::Topology t = load("hylink-3090x4");
  GenerateOptions o;
  o.chunks = 2;
  const size_t count = 1 << 20;
  const ProgramCost host = cost_of(Collective::AllReduce, 4, t, o, count);
  // Per chunk: one local reduce per socket, one remote partial reduced at home = 3 reduces.
  const double chunk_bytes = count / 2 * 4.0;
  EXPECT_DOUBLE_EQ(host.host_reduce_bytes, 2 * 3 * chunk_bytes);
  // Per chunk: a partial goes home, the result comes back: 2 crossings.
  EXPECT_EQ(host.inter_socket_crossings, 4);
  EXPECT_EQ(host.uploads_per_gpu, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(host.downloads_per_gpu, (std::vector<int>{2, 2, 2, 2}));

  o.placement = ReducePlacement::Device;
  const ProgramCost device = cost_of(Collective::AllReduce, 4, t, o, count);
  EXPECT_EQ(device.host_reduce_bytes, 0);
  // Each of 4 contributions per chunk crosses to the other socket once.
  EXPECT_EQ(device.inter_socket_crossings, 2 * 4);
  // Every GPU takes 3 (or 4 when not first in the order) contributions per chunk from host memory.
  for (int d : device.downloads_per_gpu) EXPECT_GE(d, 2 * 3);
}

// Each data item crosses a socket link once per server that needs it, and servers once per
// remote server: for AllGather that is once per item on one server, and one network crossing
// per item with two servers (each server's own socket link once).
TEST(Cost, AllGatherCrossesEachLinkOncePerItem) {
  GenerateOptions o;
  o.chunks = 3;
  const topo::Topology two_socket = load("pcie-8gpu-2socket");
  const ProgramCost one_server = cost_of(Collective::AllGather, 8, two_socket, o, 1 << 16);
  EXPECT_EQ(one_server.inter_socket_crossings, 8 * 3);
  EXPECT_EQ(one_server.network_crossings, 0);
  const topo::Topology two_servers = load("fuselink-2x8");
  ASSERT_EQ(two_servers.numa_nodes().size(), 4u);
  const ProgramCost multi = cost_of(Collective::AllGather, 16, two_servers, o, 1 << 16);
  EXPECT_EQ(multi.network_crossings, 16 * 3);
  EXPECT_LE(multi.inter_socket_crossings, 16 * 3 * 2);
  EXPECT_EQ(multi.uploads, 16 * 3);
}

TEST(Cost, BothWaysCapAppliesToBusyPcieLinks) {
  topo::Topology t = load("h200x2");
  // Host memory must not be the bottleneck, or the cap cannot show.
  for (auto& n : t.nodes)
    if (n.kind == topo::NodeKind::Numa) n.memory_gbps = 1000;
  GenerateOptions o;
  o.chunks = 2;
  o.placement = ReducePlacement::Device;
  const size_t count = size_t{64} << 20;
  const ProgramCost capped = cost_of(Collective::AllReduce, 2, t, o, count);
  t.pcie_both_ways_gbps = 0;
  const ProgramCost uncapped = cost_of(Collective::AllReduce, 2, t, o, count);
  EXPECT_GT(capped.transfer_seconds, uncapped.transfer_seconds);
}

TEST(Cost, CriticalPathOfAHandWrittenChain) {
  // D2H, then an H2D waiting for it, then a COPY waiting for nothing: longest chain 2.
  dsl::Program p;
  p.collective = Collective::AllReduce;
  p.ranks = 1;
  p.chunks = 1;
  const dsl::Location in{dsl::Buffer::Input, 0, 0}, out{dsl::Buffer::Output, 0, 0}, h{dsl::Buffer::Host, 0, 0};
  p.rank_instructions = {{{dsl::Opcode::D2H, in, h, {}}, {dsl::Opcode::H2D, h, out, {{h, 1}}}, {dsl::Opcode::Copy, in, out, {{out, 1}}}}};
  int length = 0;
  ASSERT_EQ(critical_path(p, &length), Result::Success);
  EXPECT_EQ(length, 3);
  p.rank_instructions[0][0].deps = {{out, 1}};  // a cycle: D2H waits for the H2D that waits for it
  EXPECT_EQ(critical_path(p, &length), Result::InvalidArgument);
}

// choose_plan returns the candidate the model itself ranks first.
TEST(Cost, ChoosePlanPicksTheModelsBest) {
  const topo::Topology t = load("h200x2");
  const size_t bytes = size_t{256} << 20;
  PlanChoice choice;
  ASSERT_EQ(choose_plan(Collective::AllReduce, 2, t, bytes, DataType::Float32, &choice), Result::Success);
  double best_host = 1e30, best_device = 1e30;
  for (int chunks : chunk_candidates(Collective::AllReduce, 2)) {
    for (ReducePlacement pl : {ReducePlacement::Host, ReducePlacement::Device}) {
      GenerateOptions o;
      o.placement = pl;
      o.chunks = chunks;
      const double s = cost_of(Collective::AllReduce, 2, t, o, count_for_bytes(Collective::AllReduce, 2, bytes, DataType::Float32)).seconds;
      (pl == ReducePlacement::Host ? best_host : best_device) = std::min(pl == ReducePlacement::Host ? best_host : best_device, s);
      EXPECT_GE(s, choice.seconds * (1 - 1e-12));
    }
  }
  EXPECT_DOUBLE_EQ(choice.seconds, std::min(best_host, best_device));
  EXPECT_EQ(choice.placement, best_device < best_host ? ReducePlacement::Device : ReducePlacement::Host);
  std::printf("h200x2 allreduce 2 ranks 256 MB: host %.3f ms, device %.3f ms -> %s, %d chunks\n",
              best_host * 1e3, best_device * 1e3, std::string(placement_name(choice.placement)).c_str(), choice.chunks);

  // generate() with chunks = 0 and Auto placement makes the same choice.
  GenerateOptions o;
  o.placement = ReducePlacement::Auto;
  o.bytes = bytes;
  dsl::Program p;
  ASSERT_EQ(generate(Collective::AllReduce, 2, t, o, &p), Result::Success);
  EXPECT_EQ(p.chunks, choice.chunks);
}

// Left to the model (algorithm unset), the ring is a candidate where it exists: on 4x H200 its
// AllReduce does no host reduction and the model prefers it over the host-memory-bound
// hierarchical program; on HyLink's 3090s and for AllGather the hierarchical one stays; and
// generate() with Algorithm::Auto makes the same choice.
TEST(Cost, ChoosePlanWeighsTheRingWhereItExists) {
  using Algorithm = GenerateOptions::Algorithm;
  const size_t bytes = size_t{1} << 30;
  const auto chosen = [&](const char* topology, Collective c) {
    const topo::Topology t = load(topology);
    ChooseOptions options;
    options.algorithm.reset();
    PlanChoice choice;
    EXPECT_EQ(choose_plan(c, 4, t, bytes, DataType::Float32, options, &choice), Result::Success);
    GenerateOptions o;
    o.algorithm = Algorithm::Ring;
    o.chunks = choice.chunks;
    o.placement = choice.placement;
    if (has_algorithm(c, Algorithm::Ring)) {
      const double ring = cost_of(c, 4, t, o, count_for_bytes(c, 4, bytes, DataType::Float32)).seconds;
      EXPECT_LE(choice.seconds, ring * (1 + 1e-12)) << topology;
    }
    return choice.algorithm;
  };
  EXPECT_EQ(chosen("h200x4", Collective::AllReduce), Algorithm::Ring);
  EXPECT_EQ(chosen("hylink-3090x4", Collective::AllReduce), Algorithm::Hierarchical);
  EXPECT_EQ(chosen("h200x4", Collective::AllGather), Algorithm::Hierarchical);
  EXPECT_EQ(chosen("h200x4", Collective::ReduceScatter), Algorithm::Hierarchical);  // no ring program

  // The default still fixes the hierarchical program (braid-sim's calibration is of it).
  PlanChoice fixed;
  ASSERT_EQ(choose_plan(Collective::AllReduce, 4, load("h200x4"), bytes, DataType::Float32, &fixed), Result::Success);
  EXPECT_EQ(fixed.algorithm, Algorithm::Hierarchical);

  GenerateOptions o;
  o.algorithm = Algorithm::Auto;
  o.placement = ReducePlacement::Auto;
  o.bytes = bytes;
  dsl::Program ring, hierarchical;
  ASSERT_EQ(generate(Collective::AllReduce, 4, load("h200x4"), o, &ring), Result::Success);
  o.algorithm = Algorithm::Hierarchical;
  ASSERT_EQ(generate(Collective::AllReduce, 4, load("h200x4"), o, &hierarchical), Result::Success);
  size_t ring_instructions = 0, hierarchical_instructions = 0;
  for (const auto& list : ring.rank_instructions) ring_instructions += list.size();
  for (const auto& list : hierarchical.rank_instructions) hierarchical_instructions += list.size();
  EXPECT_NE(ring_instructions, hierarchical_instructions) << "Algorithm::Auto did not take the ring";
}

}  // namespace
}  // namespace braid::plan
