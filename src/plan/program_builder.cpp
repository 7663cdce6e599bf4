#include "plan/program_builder.h"

namespace braid::plan {

using dsl::Buffer;
using dsl::Dependency;
using dsl::Location;

ProgramBuilder::ProgramBuilder(dsl::Program* program, int numa_nodes)
    : program_(program), next_slot_(static_cast<size_t>(numa_nodes), 0) {}

Location ProgramBuilder::new_slot(int numa) {
  if (static_cast<size_t>(numa) >= next_slot_.size()) next_slot_.resize(numa + 1, 0);
  return Location{Buffer::Host, numa, next_slot_[numa]++};
}

uint64_t ProgramBuilder::key(int rank, const Location& l) const {
  // Host slots are global; device cells belong to the executing rank.
  const uint64_t owner = l.is_host() ? 0 : static_cast<uint64_t>(rank) + 1;
  const uint64_t numa = l.is_host() ? static_cast<uint64_t>(l.numa) : 0;
  return owner << 48 | static_cast<uint64_t>(l.buffer) << 44 | numa << 32 |
         static_cast<uint32_t>(l.index);
}

ProgramBuilder::CellState& ProgramBuilder::cell(int rank, const Location& l) {
  return cells_[key(rank, l)];
}

int ProgramBuilder::version(int rank, const Location& l) const {
  auto it = cells_.find(key(rank, l));
  return it == cells_.end() ? 0 : it->second.writes;
}

void ProgramBuilder::add_dep(std::vector<Dependency>* deps, const Location& l, int version) {
  if (version <= 0) return;  // version 0: the initial content, nothing to wait for
  for (auto& d : *deps)
    if (d.location == l) {
      if (d.version < version) d.version = version;
      return;
    }
  deps->push_back(Dependency{l, version});
}

void ProgramBuilder::add_read(int rank, const Location& l, std::vector<Dependency>* deps) {
  CellState& c = cell(rank, l);
  c.group_start = -1;  // a later accumulate must come after this read's version
  add_dep(deps, l, c.writes);
}

void ProgramBuilder::assign(int rank, dsl::Opcode op, Location src, Location dst,
                            const std::vector<Location>& after) {
  dsl::Instruction ins{op, src, dst, {}};
  add_read(rank, src, &ins.deps);
  for (const auto& l : after) add_read(rank, l, &ins.deps);
  CellState& d = cell(rank, dst);
  // A later assign starts a new group: it follows the whole history of dst.
  add_dep(&ins.deps, dst, d.writes);
  d.writes++;
  d.group_start = -1;
  program_->rank_instructions[static_cast<size_t>(rank)].push_back(std::move(ins));
}

void ProgramBuilder::accumulate(int rank, Location src, Location dst, bool ordered) {
  dsl::Instruction ins{dsl::Opcode::Reduce, src, dst, {}};
  add_read(rank, src, &ins.deps);
  CellState& d = cell(rank, dst);
  if (ordered || d.group_start < 0) d.group_start = d.writes;
  // An accumulate needs the value it adds to: dst at the start of its group (always >= 1).
  ins.deps.push_back(Dependency{dst, d.group_start});
  d.writes++;
  if (ordered) d.group_start = -1;
  program_->rank_instructions[static_cast<size_t>(rank)].push_back(std::move(ins));
}

}  // namespace braid::plan
