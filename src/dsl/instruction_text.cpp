#include "dsl/instruction_text.h"

namespace braid::dsl {

std::string location_text(const Location& l) {
  std::string s;
  switch (l.buffer) {
    case Buffer::Input: s = "in"; break;
    case Buffer::Output: s = "out"; break;
    case Buffer::Host: s = "host" + std::to_string(l.numa); break;
  }
  s += '[';
  s += std::to_string(l.index);
  s += ']';
  return s;
}

std::string instruction_text(const Instruction& i) {
  std::string s(opcode_name(i.op));
  s += ' ';
  s += location_text(i.src);
  s += " -> ";
  s += location_text(i.dst);
  for (size_t d = 0; d < i.deps.size(); ++d) {
    s += d == 0 ? " deps: " : ", ";
    s += location_text(i.deps[d].location);
    s += ">=";
    s += std::to_string(i.deps[d].version);
  }
  return s;
}

}  // namespace braid::dsl
