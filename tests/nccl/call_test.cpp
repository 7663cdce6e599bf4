// The drop-in's one call descriptor (nccl/call.h): every entry point that takes a call has NCCL's
// name for it, and braid's collective for it, which is what the split and the engine use.
#include "nccl/call.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace braid::nccl {
namespace {

constexpr Operation kEvery[] = {Operation::AllReduce, Operation::Reduce,  Operation::Broadcast, Operation::AllGather,
                                Operation::ReduceScatter, Operation::AlltoAll, Operation::Gather, Operation::Scatter,
                                Operation::Send, Operation::Recv};

TEST(NcclCall, EveryOperationHasNcclsName) {
  std::set<std::string> names;
  for (Operation o : kEvery) names.insert(operation_name(o));
  EXPECT_EQ(names.size(), std::size(kEvery));
  EXPECT_STREQ(operation_name(Operation::AlltoAll), "AlltoAll");  // NCCL's spelling, not braid's
  EXPECT_STREQ(operation_name(Operation::ReduceScatter), "ReduceScatter");
  EXPECT_STREQ(operation_name(Operation::Send), "Send");
}

TEST(NcclCall, BraidsCollectivesRoundTrip) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
                       Collective::Reduce, Collective::AllToAll}) {
    Call call;
    call.operation = operation_of(c);
    EXPECT_EQ(call.collective(), c) << collective_name(c);
  }
}

TEST(NcclCall, ExchangesAreAllToAllsFamily) {
  for (Operation o : {Operation::Gather, Operation::Scatter, Operation::Send, Operation::Recv}) {
    const Call call{o, nullptr, nullptr, 8, ncclFloat32, ncclSum, 1, nullptr};
    EXPECT_EQ(call.collective(), Collective::AllToAll) << operation_name(o);
  }
}

// What an export fills in where its API takes no operator or root: NCCL's own defaults.
TEST(NcclCall, DefaultsAreNcclsFillIns) {
  const Call call;
  EXPECT_EQ(call.op, ncclSum);
  EXPECT_EQ(call.root, 0);
  EXPECT_EQ(call.comm, nullptr);
}

}  // namespace
}  // namespace braid::nccl
