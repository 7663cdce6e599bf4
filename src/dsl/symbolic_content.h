// What a chunk-sized cell holds during validation: UNDEFINED, or a multiset of contributions
// (rank, block, part) with multiplicities. All contributions of one value share its part.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace braid::dsl {

struct SymbolicContent {
  enum class State : uint8_t {
    Undefined,  // never written (or a non-root Broadcast send buffer)
    Poisoned,   // produced by an instruction already reported; read silently
    Defined,
  };
  State state = State::Undefined;
  int part = -1;
  // (rank * blocks_per_rank + block, multiplicity), sorted by contributor.
  std::vector<std::pair<uint32_t, uint32_t>> terms;

  bool defined() const { return state == State::Defined; }
  friend bool operator==(const SymbolicContent&, const SymbolicContent&) = default;

  static SymbolicContent single(uint32_t contributor, int part);
  static SymbolicContent poisoned();
};

// a (op) b for a reduction: multiplicities add. Both must be defined with equal parts.
SymbolicContent accumulate(const SymbolicContent& a, const SymbolicContent& b);

// "{r0.b1.p0, r2.b1.p0 x2}" or "undefined"; contributor = rank * blocks_per_rank + block.
std::string describe(const SymbolicContent& c, int blocks_per_rank);

}  // namespace braid::dsl
