// A rank's result of a case checked against the reference: each output element is either the
// reduction of the ranks' inputs (reference.h) or a copy of one rank's input element; and the
// hash by which the results that every rank must hold bit for bit are compared across ranks.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "case.h"
#include "reference.h"

namespace braid::test {

// Empty when output element `o` of `rank` (of `ranks`), at `got`, is right; else what is wrong.
inline std::string check_element(const Case& k, int rank, int ranks, size_t o, const unsigned char* got,
                                 AvgCheck avg) {
  const size_t es = datatype_size(k.type);
  const size_t n = k.count;
  char text[300];
  if (collective_reduces(k.collective)) {
    const size_t j = k.collective == Collective::ReduceScatter ? rank * n + o : o;
    const Expected e = reduce_expected(k.type, k.op, ranks, j, avg);
    if (matches(k.type, e, got)) return "";
    uint64_t bits = 0;
    std::memcpy(&bits, got, es);
    std::snprintf(text, sizeof text, "%s: rank %d element %zu: got bits %" PRIx64 " (%.9g), expected %.9g / bits %" PRIx64 " (tolerance %g)",
                  k.text().c_str(), rank, o, bits, datatype_is_float(k.type) ? load_float(k.type, got) : 0.0, e.value,
                  e.bits, e.tolerance);
    return text;
  }
  // The rank and input element this output element copies.
  int q = 0;
  size_t j = o;
  if (k.collective == Collective::AllGather) { q = static_cast<int>(o / n); j = o % n; }
  else if (k.collective == Collective::Broadcast) q = k.root;
  else if (k.collective == Collective::AllToAll) { q = static_cast<int>(o / n); j = rank * n + o % n; }
  unsigned char element[8] = {};
  write_input(k.type, RedOp::Sum, q, j, element);
  if (std::memcmp(element, got, es) == 0) return "";
  std::snprintf(text, sizeof text, "%s: rank %d element %zu differs from rank %d's input element %zu", k.text().c_str(), rank,
                o, q, j);
  return text;
}

inline uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace braid::test
