// NCCL as a share path (multipath/nccl_share_path.h): which NCCL calls a range of every block
// becomes, with which pointers, counts, peers and roots. NCCL is a recording stand-in, and the
// cases make no CUDA call, so this runs on CPU (built where the CUDA toolkit is, no GPU needed).
#include "multipath/nccl_share_path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace braid::multipath {
namespace {

struct NcclCallSeen {
  std::string name;
  const void* send = nullptr;
  const void* recv = nullptr;
  size_t count = 0;
  int peer = -1;  // the peer of a send/recv, the root of a reduce
  bool operator==(const NcclCallSeen&) const = default;
};
std::vector<NcclCallSeen> seen;
size_t fail_call = SIZE_MAX;  // the index in `seen` of the call that fails

ncclResult_t record(NcclCallSeen c) {
  seen.push_back(std::move(c));
  return seen.size() - 1 == fail_call ? ncclInvalidUsage : ncclSuccess;
}

nccl::NcclCalls recording_nccl() {
  nccl::NcclCalls n;
  n.ncclAllReduce = [](const void* s, void* r, size_t c, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
    return record({"AllReduce", s, r, c});
  };
  n.ncclAllGather = [](const void* s, void* r, size_t c, ncclDataType_t, ncclComm_t, cudaStream_t) {
    return record({"AllGather", s, r, c});
  };
  n.ncclReduceScatter = [](const void* s, void* r, size_t c, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
    return record({"ReduceScatter", s, r, c});
  };
  n.ncclBroadcast = [](const void* s, void* r, size_t c, ncclDataType_t, int root, ncclComm_t, cudaStream_t) {
    return record({"Broadcast", s, r, c, root});
  };
  n.ncclReduce = [](const void* s, void* r, size_t c, ncclDataType_t, ncclRedOp_t, int root, ncclComm_t,
                    cudaStream_t) { return record({"Reduce", s, r, c, root}); };
  n.ncclSend = [](const void* s, size_t c, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
    return record({"Send", s, nullptr, c, peer});
  };
  n.ncclRecv = [](void* r, size_t c, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
    return record({"Recv", nullptr, r, c, peer});
  };
  n.ncclGroupStart = [] { return record({"GroupStart"}); };
  n.ncclGroupEnd = [] { return record({"GroupEnd"}); };
  n.ncclGetErrorString = [](ncclResult_t) { return "stand-in failure"; };
  return n;
}

class NcclSharePathTest : public testing::Test {
 protected:
  void SetUp() override {
    seen.clear();
    fail_call = SIZE_MAX;
  }
  ShareCall call(Collective c, size_t count) {
    ShareCall s;
    s.call.operation = nccl::operation_of(c);
    s.call.send = send_.data();
    s.call.recv = recv_.data();
    s.call.count = count;
    s.call.type = ncclFloat32;
    s.call.root = 1;
    return s;
  }
  const unsigned char* send(size_t byte) const { return send_.data() + byte; }
  unsigned char* recv(size_t byte) { return recv_.data() + byte; }
  std::vector<unsigned char> send_ = std::vector<unsigned char>(1 << 16), recv_ = std::vector<unsigned char>(1 << 16);
};

TEST_F(NcclSharePathTest, OneBlockCollectivesCallNcclOnTheRange) {
  NcclSharePath path(nullptr, recording_nccl(), 0, 2, false);
  bool carried = false;
  ASSERT_EQ(path.enqueue(call(Collective::AllReduce, 1000), {100, 50}, nullptr, &carried), Result::Success);
  EXPECT_TRUE(carried);
  ASSERT_EQ(path.enqueue(call(Collective::Broadcast, 1000), {0, 600}, nullptr, &carried), Result::Success);
  EXPECT_EQ(seen, (std::vector<NcclCallSeen>{{"AllReduce", send(400), recv(400), 50},
                                            {"Broadcast", send(0), recv(0), 600, 1}}));
}

TEST_F(NcclSharePathTest, TheWholeCallIsNcclsOwnCollective) {
  NcclSharePath path(nullptr, recording_nccl(), 0, 3, false);
  bool carried = false;
  ASSERT_EQ(path.enqueue(call(Collective::ReduceScatter, 64), {0, 64}, nullptr, &carried), Result::Success);
  ASSERT_EQ(path.enqueue(call(Collective::Reduce, 64), {0, 64}, nullptr, &carried), Result::Success);
  EXPECT_EQ(seen, (std::vector<NcclCallSeen>{{"ReduceScatter", send(0), recv(0), 64},
                                            {"Reduce", send(0), recv(0), 64, 1}}));
}

// ReduceScatter's blocks are strided: one Reduce per block, rooted at the block's owner, each on the
// range of its block, into the range of the receive buffer.
TEST_F(NcclSharePathTest, ReduceScatterRangeIsOneReducePerBlock) {
  NcclSharePath path(nullptr, recording_nccl(), 2, 3, false);
  bool carried = false;
  ASSERT_EQ(path.enqueue(call(Collective::ReduceScatter, 64), {8, 16}, nullptr, &carried), Result::Success);
  const size_t block = 64 * 4, skip = 8 * 4;
  EXPECT_EQ(seen, (std::vector<NcclCallSeen>{{"GroupStart"},
                                            {"Reduce", send(skip), recv(skip), 16, 0},
                                            {"Reduce", send(block + skip), recv(skip), 16, 1},
                                            {"Reduce", send(2 * block + skip), recv(skip), 16, 2},
                                            {"GroupEnd"}}));
}

// AllGather in place (this rank's block already in the receive buffer): no copy, a send of the
// range to every peer and a receive of each peer's range into its block.
TEST_F(NcclSharePathTest, AllGatherRangeInPlaceIsSendsAndReceives) {
  NcclSharePath path(nullptr, recording_nccl(), 1, 3, false);
  const size_t block = 64 * 4, skip = 8 * 4;
  ShareCall s = call(Collective::AllGather, 64);
  s.call.send = recv(block);  // rank 1's block of the receive buffer
  bool carried = false;
  ASSERT_EQ(path.enqueue(s, {8, 16}, nullptr, &carried), Result::Success);
  EXPECT_EQ(seen, (std::vector<NcclCallSeen>{{"GroupStart"},
                                            {"Send", recv(block + skip), nullptr, 16, 0},
                                            {"Recv", nullptr, recv(skip), 16, 0},
                                            {"Send", recv(block + skip), nullptr, 16, 2},
                                            {"Recv", nullptr, recv(2 * block + skip), 16, 2},
                                            {"GroupEnd"}}));
}

TEST_F(NcclSharePathTest, AnEmptyRangeCallsNothing) {
  NcclSharePath path(nullptr, recording_nccl(), 0, 2, false);
  bool carried = false;
  ASSERT_EQ(path.enqueue(call(Collective::AllReduce, 100), {100, 0}, nullptr, &carried), Result::Success);
  EXPECT_TRUE(carried);
  EXPECT_TRUE(seen.empty());
}

// NCCL's failure is the path's, with NCCL's code and text; a group it failed in is still closed.
TEST_F(NcclSharePathTest, NcclFailuresComeBackWithTheirCode) {
  NcclSharePath path(nullptr, recording_nccl(), 0, 2, false);
  bool carried = true;
  fail_call = 0;
  EXPECT_EQ(path.enqueue(call(Collective::AllReduce, 100), {0, 10}, nullptr, &carried), Result::InvalidUsage);
  EXPECT_FALSE(carried);
  EXPECT_NE(std::string(last_error()).find("stand-in failure"), std::string::npos) << last_error();
  seen.clear();
  fail_call = 1;  // the first Reduce, after GroupStart
  EXPECT_EQ(path.enqueue(call(Collective::ReduceScatter, 64), {4, 4}, nullptr, &carried), Result::InvalidUsage);
  ASSERT_EQ(seen.size(), 3u);  // no Reduce after the failed one
  EXPECT_EQ(seen.back().name, "GroupEnd");
}

}  // namespace
}  // namespace braid::multipath
