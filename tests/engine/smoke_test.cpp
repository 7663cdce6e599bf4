// First end-to-end checks: a hand-written HyLink Figure-3 style program, and generated programs
// through the communicator, with ranks as threads.
#include <gtest/gtest.h>

#include <numeric>

#include "dsl/validator.h"
#include "harness.h"

namespace braid {
namespace {

using dsl::Buffer;
using dsl::Instruction;
using dsl::Location;
using dsl::Opcode;

Location in(int i) { return {Buffer::Input, 0, i}; }
Location out(int i) { return {Buffer::Output, 0, i}; }
Location host(int numa, int i) { return {Buffer::Host, numa, i}; }

// AllReduce over 2 ranks with 2 chunks: rank 0's upload of each chunk is the accumulator, rank 1
// adds its chunk into it on the CPU, both download the result.
dsl::Program figure3_allreduce() {
  dsl::Program p;
  p.collective = Collective::AllReduce;
  p.ranks = 2;
  p.chunks = 2;
  p.rank_instructions.resize(2);
  for (int c = 0; c < 2; ++c) {
    p.rank_instructions[0].push_back({Opcode::D2H, in(c), host(0, c), {}});
    p.rank_instructions[1].push_back({Opcode::D2H, in(c), host(0, 2 + c), {}});
    p.rank_instructions[1].push_back(
        {Opcode::Reduce, host(0, 2 + c), host(0, c), {{host(0, c), 1}, {host(0, 2 + c), 1}}});
    for (int r = 0; r < 2; ++r)
      p.rank_instructions[r].push_back({Opcode::H2D, host(0, c), out(c), {{host(0, c), 2}}});
  }
  return p;
}

TEST(EngineSmoke, Figure3AllReduceThreads) {
  const dsl::Program p = figure3_allreduce();
  ASSERT_TRUE(dsl::validate(p).ok) << dsl::validate(p).message;
  const auto topo = test::load_test_topology();
  const size_t count = 100'001;
  auto outcomes = test::run_ranks(
      test::Mode::Threads, 2, topo, count * sizeof(float),
      [&](engine::Communicator& comm, int rank, unsigned char* result) {
        std::vector<float> send(count), recv(count, -1.f);
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((i * 7 + rank) % 13);
        Result r = comm.run_program(p, send.data(), recv.data(), count, DataType::Float32);
        std::memcpy(result, recv.data(), count * sizeof(float));
        return r;
      });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
    const float* got = reinterpret_cast<const float*>(outcomes[r].output.data());
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(got[i], static_cast<float>((i * 7) % 13 + (i * 7 + 1) % 13)) << "rank " << r << " at " << i;
  }
}

TEST(EngineSmoke, GeneratedAllReduceThreads) {
  const auto topo = test::load_test_topology();
  for (int ranks = 1; ranks <= 4; ++ranks) {
    const size_t count = 12345;
    auto outcomes = test::run_ranks(
        test::Mode::Threads, ranks, topo, count * sizeof(int32_t),
        [&](engine::Communicator& comm, int rank, unsigned char* result) {
          std::vector<int32_t> send(count), recv(count, -1);
          for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(i * (rank + 1));
          Result r = comm.all_reduce(send.data(), recv.data(), count, DataType::Int32, RedOp::Sum);
          std::memcpy(result, recv.data(), count * sizeof(int32_t));
          return r;
        });
    const int32_t factor = ranks * (ranks + 1) / 2;
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
      const int32_t* got = reinterpret_cast<const int32_t*>(outcomes[r].output.data());
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], static_cast<int32_t>(i) * factor) << ranks << " ranks, rank " << r << " at " << i;
    }
  }
}

}  // namespace
}  // namespace braid
