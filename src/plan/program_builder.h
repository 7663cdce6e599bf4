// Emits instructions into a Program and derives their version dependencies, so the generators
// only say what moves where. Instructions must be emitted in a causal order (everything an
// instruction reads was emitted before it); then every dependency points backwards and each
// rank's list is in an order the engine can issue without deadlock.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dsl/program.h"

namespace braid::plan {

class ProgramBuilder {
 public:
  // `numa_nodes` is the number of NUMA indices slots may be allocated on.
  ProgramBuilder(dsl::Program* program, int numa_nodes);

  // A fresh host slot on NUMA index `numa` (slots are never reused, so no write-after-read
  // hazards arise on host memory).
  dsl::Location new_slot(int numa);

  // dst := src. Depends on src's complete content, and on dst's last version if it was written.
  // `after` adds ordering dependencies on other locations of `rank` or host slots (e.g. an
  // in-place write that must wait for the upload of the data it overwrites).
  void assign(int rank, dsl::Opcode op, dsl::Location src, dsl::Location dst,
              const std::vector<dsl::Location>& after = {});
  // dst := dst (op) src. With `ordered`, a strict chain after dst's last write; otherwise joins the
  // open unordered group of accumulates on dst (started after dst's last assign or read).
  void accumulate(int rank, dsl::Location src, dsl::Location dst, bool ordered);

  int version(int rank, const dsl::Location& l) const;

 private:
  struct CellState {
    int writes = 0;
    int group_start = -1;  // version the open unordered accumulate group started at; -1: none
  };
  uint64_t key(int rank, const dsl::Location& l) const;
  CellState& cell(int rank, const dsl::Location& l);
  // The dependency a reader needs to see l's complete content (closes an open group).
  void add_read(int rank, const dsl::Location& l, std::vector<dsl::Dependency>* deps);
  static void add_dep(std::vector<dsl::Dependency>* deps, const dsl::Location& l, int version);

  dsl::Program* program_;
  std::vector<int> next_slot_;
  std::unordered_map<uint64_t, CellState> cells_;
};

}  // namespace braid::plan
