// Canonical text of one location / instruction, shared by the printer and the validator's
// messages so that both always spell a program the same way.
#pragma once

#include <string>

#include "dsl/program.h"

namespace braid::dsl {

std::string location_text(const Location& l);     // "in[3]", "out[0]", "host1[7]"
std::string instruction_text(const Instruction& i);  // "REDUCE host0[1] -> host0[0] deps: host0[0]>=1"

}  // namespace braid::dsl
