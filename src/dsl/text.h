// The text form of a program, after HyLink's Figure 3:
//
//   program allreduce ranks=2 chunks=2 root=0
//   # Rank 0
//   D2H in[0] -> host0[0]
//   REDUCE host0[1] -> host0[0] deps: host0[0]>=1, host0[1]>=1
//   H2D host0[0] -> out[0] deps: host0[0]>=2
//   # Rank 1
//   ...
//
// Device locations are in[i] / out[i] of the executing rank; host slots are hostN[i] on NUMA node N
// (the paper's host[i] reads as host0[i]). Blank lines and other '#' comments are ignored.
// print_program(parse_program(t)) is the canonical form; parse(print(p)) == p exactly.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "dsl/program.h"

namespace braid::dsl {

struct ParseError {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string message;
};

std::string print_program(const Program& p);

// On failure returns InvalidArgument, fills *error (if given) and sets the last-error text to
// "line L, column C: message".
Result parse_program(std::string_view text, Program* out, ParseError* error = nullptr);

}  // namespace braid::dsl
