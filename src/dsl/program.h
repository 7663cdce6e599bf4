// The PCIe CCL program (HyLink's DSL, section 3.1): per-rank lists of D2H / H2H / REDUCE / H2D
// instructions over chunks, ordered by chunk versions. braid adds COPY, a device-local copy, so
// that out-of-place collectives need not send a rank's own data over PCIe twice.
//
// Buffers and chunks. Every buffer is made of blocks of `count` elements (NCCL's count: per rank
// for AllReduce/Broadcast/Reduce, the send count for AllGather, the receive count for
// ReduceScatter, the per-peer count for AllToAll). Each block is cut into `chunks` parts; chunk
// index i of a buffer is part (i % chunks) of block (i / chunks), covering elements
//   [block*count + count*part/chunks, block*count + count*(part+1)/chunks).
// Host slots hold one chunk each: host slot k of NUMA node n is the k-th chunk-sized piece of that
// node's staging segment. Device locations always name the executing rank's own buffers.
//
// Semantics. D2H/H2H/H2D/COPY set dst = src. REDUCE sets dst = dst (op) src; with a host dst the
// CPU reduces (HyLink), with a device dst the engine stages src to the GPU and reduces there.
// Each location has a version: the number of writes to it that have started. A dependency
// "loc>=v" holds once v writes to loc started; the engine then gates each slice on the writers'
// per-slice progress. The validator (validator.h) states the rules a program must keep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/types.h"

namespace braid::dsl {

enum class Opcode : uint8_t { D2H, H2H, Reduce, H2D, Copy };

enum class Buffer : uint8_t {
  Input,   // the rank's send buffer (device)
  Output,  // the rank's receive buffer (device)
  Host,    // a staging slot in host memory on a NUMA node
};

struct Location {
  Buffer buffer = Buffer::Input;
  int numa = 0;   // NUMA node; Host only (0 for device buffers)
  int index = 0;  // chunk index (device) or slot index (host)
  bool is_host() const { return buffer == Buffer::Host; }
  bool is_device() const { return buffer != Buffer::Host; }
  friend bool operator==(const Location&, const Location&) = default;
  friend auto operator<=>(const Location&, const Location&) = default;
};

struct Dependency {
  Location location;
  int version = 0;  // holds once `version` writes to `location` have started
  friend bool operator==(const Dependency&, const Dependency&) = default;
};

struct Instruction {
  Opcode op = Opcode::D2H;
  Location src;
  Location dst;
  std::vector<Dependency> deps;
  friend bool operator==(const Instruction&, const Instruction&) = default;
};

struct Program {
  Collective collective = Collective::AllReduce;
  int ranks = 1;
  int chunks = 1;  // parts per block
  int root = 0;    // Broadcast and Reduce only
  // ranks[r] is the instruction list rank r executes, in issue order.
  std::vector<std::vector<Instruction>> rank_instructions;
  friend bool operator==(const Program&, const Program&) = default;
};

// Blocks in each device buffer of a collective with `ranks` ranks.
int input_blocks(Collective c, int ranks);
int output_blocks(Collective c, int ranks);

// Host slots used on each NUMA node (1 + the largest slot index seen there), indexed by node.
std::vector<int> host_slots_per_numa(const Program& p);

// Element range [begin, end) of chunk `index` in a buffer of blocks of `count` elements.
struct ElementRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};
ElementRange chunk_elements(uint64_t count, int chunks, int index);
// The largest chunk, in elements: the size of a host slot.
uint64_t max_chunk_elements(uint64_t count, int chunks);

std::string_view opcode_name(Opcode op);  // "D2H", "H2H", "REDUCE", "H2D", "COPY"

}  // namespace braid::dsl
