// Proves a program computes its collective: symbolic execution over chunk contents, plus the
// ordering rules the engine relies on. See docs/PROGRAM.md for the rules in full.
#pragma once

#include <string>

#include "dsl/program.h"

namespace braid::dsl {

struct ValidateOptions {
  // Check with NCCL's in-place buffer aliasing (AllReduce: in[i] is out[i]; AllGather: in[i] is
  // out[rank*chunks+i]; ReduceScatter: out[i] is in[rank*chunks+i]; Broadcast/Reduce: in[i] is
  // out[i] at the root; AllToAll: in[i] is out[i]).
  bool in_place = false;
};

struct ValidationReport {
  bool ok = true;
  int rank = -1;         // the first offending instruction, when there is one
  int instruction = -1;  // index in rank_instructions[rank]
  std::string message;   // what is wrong, naming the instruction in text form
};

ValidationReport validate(const Program& p, const ValidateOptions& options = {});

}  // namespace braid::dsl
