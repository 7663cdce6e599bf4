// What the engine derives from a validated program before running it, the same on every rank:
// one deterministic global topological order of all ranks' instructions, the writer of every
// version of every storage cell, each dependency resolved to the instruction it waits for, and
// per write whether its content is still a raw (unscaled) user input and whose (for PreMulSum,
// whose scalar differs per rank).
//
// Every instruction writes exactly one cell, so an instruction's position in the global order is
// also the id of its write and of its progress counter.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "dsl/program.h"

namespace braid::engine {

struct ResolvedDep {
  int32_t writer = 0;       // position (in Schedule::order) of the instruction waited for
  bool same_cell = false;   // the dependency is on the instruction's own src or dst cell: the
                            // engine gates slice by slice when the sizes match, else on completion
};

struct ScheduledInstruction {
  int rank = 0;
  int index = 0;  // in program.rank_instructions[rank]
  dsl::Instruction instruction;
  bool accumulate = false;  // REDUCE: dst = dst (op) src
  int part = 0;             // the chunk part of the data written (its size)
  int raw_rank = -1;        // the written content is rank raw_rank's unscaled input (-1: not raw)
  int dst_raw_rank = -1;    // an accumulate's operands that are raw inputs, and whose: PreMulSum
  int src_raw_rank = -1;    // scales each by that rank's scalar (-1: already scaled)
  std::vector<ResolvedDep> deps;  // including the slot-order predecessor of an accumulate
};

// An output chunk of a rank and the instruction that writes its final content (-1: none; then
// the content is the aliased input when in place).
struct FinalOutput {
  int chunk = 0;
  int32_t writer = -1;
  int raw_rank = -1;  // the content is still this rank's unscaled input (-1: not raw)
};

struct Schedule {
  Collective collective = Collective::AllReduce;
  int ranks = 1;
  int chunks = 1;
  int root = 0;
  std::vector<bool> in_place;  // per rank
  std::vector<ScheduledInstruction> order;
  std::vector<std::vector<int32_t>> rank_order;  // positions in `order`, per rank
  std::vector<std::vector<FinalOutput>> final_outputs;  // per rank (reducing collectives)
  std::vector<int> host_slots;                          // per NUMA index
};

// Builds the schedule; in_place[r] applies NCCL's in-place aliasing to rank r's buffers (every
// rank must build from the same flags, so ranks agree on the order). Fails with InvalidArgument
// when the program's writes do not form version groups or its dependencies are cyclic (a
// validated program never does).
Result build_schedule(const dsl::Program& program, const std::vector<bool>& in_place,
                      Schedule* out);

}  // namespace braid::engine
