#include "engine/schedule.h"

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>

namespace braid::engine {
namespace {

using dsl::Buffer;
using dsl::Location;
using dsl::Opcode;

// The storage a location names for the executing rank, with NCCL's in-place aliasing applied
// (the same mapping the validator uses).
uint64_t cell_key(const dsl::Program& p, const std::vector<bool>& in_place_per_rank, int rank,
                  const Location& loc) {
  const bool in_place = in_place_per_rank[rank];
  if (loc.is_host())
    return (uint64_t{0} << 63) | (static_cast<uint64_t>(loc.numa) << 32) |
           static_cast<uint32_t>(loc.index);
  Buffer buffer = loc.buffer;
  int index = loc.index;
  if (in_place) {
    switch (p.collective) {
      case Collective::AllReduce:
      case Collective::AllToAll:
        buffer = Buffer::Output;
        break;
      case Collective::AllGather:
        if (buffer == Buffer::Input) {
          buffer = Buffer::Output;
          index = rank * p.chunks + index;
        }
        break;
      case Collective::ReduceScatter:
        if (buffer == Buffer::Output) {
          buffer = Buffer::Input;
          index = rank * p.chunks + index;
        }
        break;
      case Collective::Broadcast:
      case Collective::Reduce:
        if (rank == p.root) buffer = Buffer::Output;
        break;
    }
  }
  return (uint64_t{1} << 63) | (static_cast<uint64_t>(rank) << 33) |
         (static_cast<uint64_t>(buffer == Buffer::Output) << 32) | static_cast<uint32_t>(index);
}

struct Group {
  int start = 0;                 // the version the group's writers depend on (0: first write)
  std::vector<int32_t> members;  // instruction ids (flat), later sorted by global position
};

struct CellWrites {
  std::vector<Group> groups;          // sorted by start
  std::vector<int32_t> writer_of;     // writer_of[v-1]: the flat id writing version v
  std::vector<int> group_end_of;      // per version: the end version of its group
};

}  // namespace

Result build_schedule(const dsl::Program& p, const std::vector<bool>& in_place, Schedule* out) {
  const int ranks = p.ranks;
  if (ranks < 1 || static_cast<int>(p.rank_instructions.size()) != ranks)
    return fail(Result::InvalidArgument, "program has %zu instruction lists for %d ranks",
                p.rank_instructions.size(), ranks);
  if (static_cast<int>(in_place.size()) != ranks)
    return fail(Result::InvalidArgument, "in-place flags for %zu ranks, program has %d",
                in_place.size(), ranks);
  if (p.chunks < 1) return fail(Result::InvalidArgument, "program has %d chunks", p.chunks);

  // Flat ids: all instructions of rank 0, then rank 1, ...
  std::vector<std::pair<int, int>> flat;  // (rank, index)
  for (int r = 0; r < ranks; ++r)
    for (size_t i = 0; i < p.rank_instructions[r].size(); ++i)
      flat.emplace_back(r, static_cast<int>(i));
  const int32_t n = static_cast<int32_t>(flat.size());
  auto ins = [&](int32_t id) -> const dsl::Instruction& {
    return p.rank_instructions[flat[id].first][flat[id].second];
  };
  auto key = [&](int32_t id, const Location& l) {
    return cell_key(p, in_place, flat[id].first, l);
  };

  // Group the writers of each cell by the version of their own cell they depend on.
  std::unordered_map<uint64_t, CellWrites> cells;
  std::vector<int> group_start(n, 0);
  for (int32_t id = 0; id < n; ++id) {
    const auto& in = ins(id);
    const uint64_t dst = key(id, in.dst);
    int start = 0;
    for (const auto& d : in.deps)
      if (key(id, d.location) == dst) start = std::max(start, d.version);
    group_start[id] = start;
    auto& cw = cells[dst];
    auto it = std::find_if(cw.groups.begin(), cw.groups.end(),
                           [&](const Group& g) { return g.start == start; });
    if (it == cw.groups.end()) {
      cw.groups.push_back({start, {}});
      it = cw.groups.end() - 1;
    }
    it->members.push_back(id);
  }
  for (auto& [k, cw] : cells) {
    std::sort(cw.groups.begin(), cw.groups.end(),
              [](const Group& a, const Group& b) { return a.start < b.start; });
    int end = 0;
    for (const auto& g : cw.groups) {
      if (g.start != end) {
        const auto& first = ins(g.members.front());
        return fail(Result::InvalidArgument,
                    "rank %d instruction %d (%s): its writes depend on version %d of their "
                    "destination, which is not where a group of writes ends (%d)",
                    flat[g.members.front()].first, flat[g.members.front()].second,
                    std::string(dsl::opcode_name(first.op)).c_str(), g.start, end);
      }
      end += static_cast<int>(g.members.size());
    }
    cw.group_end_of.assign(end + 1, 0);
    for (const auto& g : cw.groups)
      for (int v = g.start + 1; v <= g.start + static_cast<int>(g.members.size()); ++v)
        cw.group_end_of[v] = g.start + static_cast<int>(g.members.size());
  }

  // Dependency edges: a dependency L>=v waits for every write of the groups up to version v.
  std::vector<std::vector<int32_t>> successors(n);
  std::vector<int> indegree(n, 0);
  for (int32_t id = 0; id < n; ++id) {
    for (const auto& d : ins(id).deps) {
      if (d.version <= 0) continue;
      auto it = cells.find(key(id, d.location));
      const int written = it == cells.end() ? 0 : static_cast<int>(it->second.group_end_of.size()) - 1;
      if (d.version > written)
        return fail(Result::InvalidArgument,
                    "rank %d instruction %d depends on version %d of a location written only %d "
                    "times",
                    flat[id].first, flat[id].second, d.version, written);
      for (const auto& g : it->second.groups) {
        if (g.start >= d.version) break;
        for (int32_t w : g.members) {
          if (w == id) continue;
          successors[w].push_back(id);
          ++indegree[id];
        }
      }
    }
  }

  // Kahn's algorithm, earliest (index in rank list, rank) first: interleaves the ranks' lists
  // the way they would issue in parallel, deterministically.
  using Entry = std::pair<int64_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  auto priority = [&](int32_t id) {
    return static_cast<int64_t>(flat[id].second) * (ranks + 1) + flat[id].first;
  };
  for (int32_t id = 0; id < n; ++id)
    if (indegree[id] == 0) ready.push({priority(id), id});
  std::vector<int32_t> position(n, -1);
  std::vector<int32_t> by_position;
  by_position.reserve(n);
  while (!ready.empty()) {
    int32_t id = ready.top().second;
    ready.pop();
    position[id] = static_cast<int32_t>(by_position.size());
    by_position.push_back(id);
    for (int32_t s : successors[id])
      if (--indegree[s] == 0) ready.push({priority(s), s});
  }
  if (static_cast<int32_t>(by_position.size()) != n) {
    for (int32_t id = 0; id < n; ++id)
      if (position[id] < 0)
        return fail(Result::InvalidArgument,
                    "program dependencies form a cycle (rank %d instruction %d is on or behind it)",
                    flat[id].first, flat[id].second);
  }

  // Versions: within a group, writers take slots in the global order.
  for (auto& [k, cw] : cells) {
    cw.writer_of.clear();
    for (auto& g : cw.groups) {
      std::sort(g.members.begin(), g.members.end(),
                [&](int32_t a, int32_t b) { return position[a] < position[b]; });
      for (int32_t w : g.members) cw.writer_of.push_back(w);
    }
  }

  Schedule s;
  s.collective = p.collective;
  s.ranks = ranks;
  s.chunks = p.chunks;
  s.root = p.root;
  s.in_place = in_place;
  s.host_slots = dsl::host_slots_per_numa(p);
  s.order.resize(n);
  s.rank_order.assign(ranks, {});
  // Writer (flat id) of the content an instruction reads from `loc`: the writer of the highest
  // version it depends on there, or -1 (initial content).
  auto content_writer = [&](int32_t id, const Location& loc) -> int32_t {
    const uint64_t c = key(id, loc);
    int version = 0;
    for (const auto& d : ins(id).deps)
      if (key(id, d.location) == c) version = std::max(version, d.version);
    if (version == 0) return -1;
    const auto& cw = cells.at(c);
    return cw.writer_of[cw.group_end_of[version] - 1];
  };

  for (int32_t pos = 0; pos < n; ++pos) {
    const int32_t id = by_position[pos];
    const auto& in = ins(id);
    ScheduledInstruction& si = s.order[pos];
    si.rank = flat[id].first;
    si.index = flat[id].second;
    si.instruction = in;
    si.accumulate = in.op == Opcode::Reduce;
    s.rank_order[si.rank].push_back(pos);

    const uint64_t src_cell = key(id, in.src);
    const uint64_t dst_cell = key(id, in.dst);
    // The source's content: its part and whether it is still raw.
    const int32_t src_writer = content_writer(id, in.src);
    int src_raw = -1;
    if (src_writer >= 0) {
      const auto& w = s.order[position[src_writer]];
      si.part = w.part;
      src_raw = w.raw_rank;
    } else if (in.src.is_device()) {
      si.part = in.src.index % p.chunks;
      src_raw = si.rank;  // device locations are the instruction's own rank's buffers
    } else {
      return fail(Result::InvalidArgument,
                  "rank %d instruction %d reads host slot %d on NUMA %d before anything wrote it",
                  si.rank, si.index, in.src.index, in.src.numa);
    }
    if (in.dst.is_device() && in.dst.index % p.chunks != si.part)
      return fail(Result::InvalidArgument,
                  "rank %d instruction %d writes part %d into a chunk of part %d", si.rank,
                  si.index, si.part, in.dst.index % p.chunks);

    // Resolve dependencies to the writer of each version (rounded up to its group's end).
    for (const auto& d : in.deps) {
      if (d.version <= 0) continue;
      const uint64_t c = key(id, d.location);
      const auto& cw = cells.at(c);
      int32_t w = cw.writer_of[cw.group_end_of[d.version] - 1];
      if (w == id) continue;
      si.deps.push_back({position[w], c == src_cell || c == dst_cell});
    }
    if (si.accumulate) {
      const auto& cw = cells.at(dst_cell);
      const auto& g = *std::find_if(cw.groups.begin(), cw.groups.end(), [&](const Group& gr) {
        return gr.start == group_start[id];
      });
      auto me = std::find(g.members.begin(), g.members.end(), id);
      int dst_raw = -1;
      if (me != g.members.begin()) {
        si.deps.push_back({position[*(me - 1)], true});  // HyLink slot order
      } else if (g.start > 0) {
        dst_raw = s.order[position[cw.writer_of[g.start - 1]]].raw_rank;
      } else if (in.dst.is_device()) {
        dst_raw = si.rank;  // accumulating into an input that was never written
      }
      si.dst_raw_rank = dst_raw;
      si.src_raw_rank = src_raw;
      si.raw_rank = -1;
    } else {
      si.raw_rank = src_raw;
    }
    // Keep one entry per writer (the strictest gate wins: completion over per slice).
    std::sort(si.deps.begin(), si.deps.end(), [](const ResolvedDep& a, const ResolvedDep& b) {
      return a.writer != b.writer ? a.writer < b.writer : a.same_cell < b.same_cell;
    });
    si.deps.erase(std::unique(si.deps.begin(), si.deps.end(),
                              [](const ResolvedDep& a, const ResolvedDep& b) {
                                return a.writer == b.writer;
                              }),
                  si.deps.end());
  }

  // Final outputs of reducing collectives.
  s.final_outputs.assign(ranks, {});
  if (collective_reduces(p.collective)) {
    const int out_chunks = dsl::output_blocks(p.collective, ranks) * p.chunks;
    for (int r = 0; r < ranks; ++r) {
      if (p.collective == Collective::Reduce && r != p.root) continue;
      for (int i = 0; i < out_chunks; ++i) {
        const uint64_t c = cell_key(p, in_place, r, Location{Buffer::Output, 0, i});
        FinalOutput f;
        f.chunk = i;
        auto it = cells.find(c);
        if (it != cells.end() && !it->second.writer_of.empty()) {
          f.writer = position[it->second.writer_of.back()];
          f.raw_rank = s.order[f.writer].raw_rank;
        } else if (in_place[r]) {
          f.raw_rank = r;
        } else {
          continue;  // never written: the validator would have refused this program
        }
        s.final_outputs[r].push_back(f);
      }
    }
  }
  *out = std::move(s);
  return Result::Success;
}

}  // namespace braid::engine
