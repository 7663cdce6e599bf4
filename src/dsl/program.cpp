#include "dsl/program.h"

#include <algorithm>

namespace braid::dsl {

int input_blocks(Collective c, int ranks) {
  return (c == Collective::ReduceScatter || c == Collective::AllToAll) ? ranks : 1;
}

int output_blocks(Collective c, int ranks) {
  return (c == Collective::AllGather || c == Collective::AllToAll) ? ranks : 1;
}

std::vector<int> host_slots_per_numa(const Program& p) {
  std::vector<int> slots;
  auto note = [&](const Location& l) {
    if (!l.is_host() || l.numa < 0) return;
    if (static_cast<size_t>(l.numa) >= slots.size()) slots.resize(l.numa + 1, 0);
    slots[l.numa] = std::max(slots[l.numa], l.index + 1);
  };
  for (const auto& list : p.rank_instructions)
    for (const auto& ins : list) {
      note(ins.src);
      note(ins.dst);
      for (const auto& d : ins.deps) note(d.location);
    }
  return slots;
}

ElementRange chunk_elements(uint64_t count, int chunks, int index) {
  const uint64_t c = static_cast<uint64_t>(chunks);
  const uint64_t block = static_cast<uint64_t>(index) / c;
  const uint64_t part = static_cast<uint64_t>(index) % c;
  // count*part may exceed 64 bits only for absurd counts; use 128-bit to be exact anyway.
  __extension__ typedef unsigned __int128 uint128;  // __extension__: -Wpedantic accepts it
  const auto at = [&](uint64_t p) {
    return static_cast<uint64_t>(static_cast<uint128>(count) * p / c);
  };
  return {block * count + at(part), block * count + at(part + 1)};
}

uint64_t max_chunk_elements(uint64_t count, int chunks) {
  return (count + static_cast<uint64_t>(chunks) - 1) / static_cast<uint64_t>(chunks);
}

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::D2H: return "D2H";
    case Opcode::H2H: return "H2H";
    case Opcode::Reduce: return "REDUCE";
    case Opcode::H2D: return "H2D";
    case Opcode::Copy: return "COPY";
  }
  return "?";
}

}  // namespace braid::dsl
