#include "dsl/symbolic_content.h"

namespace braid::dsl {

SymbolicContent SymbolicContent::single(uint32_t contributor, int part) {
  SymbolicContent c;
  c.state = State::Defined;
  c.part = part;
  c.terms.push_back({contributor, 1});
  return c;
}

SymbolicContent SymbolicContent::poisoned() {
  SymbolicContent c;
  c.state = State::Poisoned;
  return c;
}

SymbolicContent accumulate(const SymbolicContent& a, const SymbolicContent& b) {
  SymbolicContent r;
  r.state = SymbolicContent::State::Defined;
  r.part = a.part;
  r.terms.reserve(a.terms.size() + b.terms.size());
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    if (j == b.terms.size() || (i < a.terms.size() && a.terms[i].first < b.terms[j].first)) {
      r.terms.push_back(a.terms[i++]);
    } else if (i == a.terms.size() || b.terms[j].first < a.terms[i].first) {
      r.terms.push_back(b.terms[j++]);
    } else {
      r.terms.push_back({a.terms[i].first, a.terms[i].second + b.terms[j].second});
      ++i;
      ++j;
    }
  }
  return r;
}

std::string describe(const SymbolicContent& c, int blocks_per_rank) {
  if (c.state == SymbolicContent::State::Undefined) return "undefined";
  if (c.state == SymbolicContent::State::Poisoned) return "invalid";
  std::string s = "{";
  for (size_t i = 0; i < c.terms.size(); ++i) {
    if (i) s += ", ";
    if (i == 8 && c.terms.size() > 10) {
      s += "... " + std::to_string(c.terms.size() - 9) + " more ..., ";
      i = c.terms.size() - 1;
    }
    const uint32_t who = c.terms[i].first;
    s += "r" + std::to_string(who / blocks_per_rank) + ".b" + std::to_string(who % blocks_per_rank) +
         ".p" + std::to_string(c.part);
    if (c.terms[i].second != 1) s += " x" + std::to_string(c.terms[i].second);
  }
  return s + "}";
}

}  // namespace braid::dsl
