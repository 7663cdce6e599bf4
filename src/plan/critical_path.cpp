// The longest dependency chain of a program. A dependency "L>=v" waits for every writer of
// versions 1..v of L; writers are grouped by the version of L they themselves wait for (an
// unordered accumulate group shares one), so each group gets a zero-weight node that joins its
// members and the group before it, which keeps the graph linear in the program size.
#include <algorithm>
#include <unordered_map>

#include "plan/cost.h"

namespace braid::plan {

namespace {

uint64_t cell_key(int rank, const dsl::Location& l) {
  const uint64_t owner = l.is_host() ? 0 : static_cast<uint64_t>(rank) + 1;
  const uint64_t numa = l.is_host() ? static_cast<uint64_t>(l.numa) : 0;
  return owner << 48 | static_cast<uint64_t>(l.buffer) << 44 | numa << 32 | static_cast<uint32_t>(l.index);
}

struct Group {
  int start = 0;
  int end = 0;
  int node = 0;  // graph node id
};

}  // namespace

Result critical_path(const dsl::Program& program, int* length) {
  struct Ref {
    int rank;
    int index;
  };
  std::vector<Ref> refs;
  for (size_t r = 0; r < program.rank_instructions.size(); ++r)
    for (size_t i = 0; i < program.rank_instructions[r].size(); ++i)
      refs.push_back({static_cast<int>(r), static_cast<int>(i)});
  const int n_ins = static_cast<int>(refs.size());
  auto ins_of = [&](int id) -> const dsl::Instruction& {
    return program.rank_instructions[static_cast<size_t>(refs[static_cast<size_t>(id)].rank)]
                                    [static_cast<size_t>(refs[static_cast<size_t>(id)].index)];
  };

  // Writers per cell with the version of their own cell they wait for.
  std::unordered_map<uint64_t, std::vector<std::pair<int, int>>> writers;  // (start, id)
  for (int id = 0; id < n_ins; ++id) {
    const auto& ins = ins_of(id);
    int start = 0;
    for (const auto& d : ins.deps)
      if (d.location == ins.dst) start = std::max(start, d.version);
    writers[cell_key(refs[static_cast<size_t>(id)].rank, ins.dst)].emplace_back(start, id);
  }
  int next_node = n_ins;
  std::vector<std::vector<int>> edges(static_cast<size_t>(n_ins));  // from -> to
  std::unordered_map<uint64_t, std::vector<Group>> groups;
  for (auto& [key, list] : writers) {
    std::sort(list.begin(), list.end());
    auto& gs = groups[key];
    for (size_t i = 0; i < list.size();) {
      size_t j = i;
      while (j < list.size() && list[j].first == list[i].first) ++j;
      const int size = static_cast<int>(j - i);
      // The version a group ends at: the writes before it plus its members.
      const int before = gs.empty() ? 0 : gs.back().end;
      Group g{list[i].first, before + size, next_node++};
      edges.emplace_back();
      for (size_t k = i; k < j; ++k) edges[static_cast<size_t>(list[k].second)].push_back(g.node);
      if (!gs.empty()) edges[static_cast<size_t>(gs.back().node)].push_back(g.node);
      gs.push_back(g);
      i = j;
    }
  }
  for (int id = 0; id < n_ins; ++id) {
    const auto& ins = ins_of(id);
    for (const auto& d : ins.deps) {
      if (d.version <= 0) continue;
      auto it = groups.find(cell_key(refs[static_cast<size_t>(id)].rank, d.location));
      const Group* found = nullptr;
      if (it != groups.end())
        for (const Group& g : it->second)
          if (g.end >= d.version) {
            found = &g;
            break;
          }
      if (found == nullptr)
        return fail(Result::InvalidArgument,
                    "critical path: rank %d instruction %d waits for a version no writer reaches",
                    refs[static_cast<size_t>(id)].rank, refs[static_cast<size_t>(id)].index);
      edges[static_cast<size_t>(found->node)].push_back(id);
    }
  }
  // Longest path by Kahn's algorithm; instructions weigh 1, group joins 0.
  const size_t n = edges.size();
  std::vector<int> indegree(n, 0), depth(n, 0);
  for (const auto& out : edges)
    for (int to : out) indegree[static_cast<size_t>(to)]++;
  std::vector<int> ready;
  for (size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(static_cast<int>(v));
  size_t done = 0;
  int longest = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    ++done;
    const int d = depth[static_cast<size_t>(v)] + (v < n_ins ? 1 : 0);
    longest = std::max(longest, d);
    for (int to : edges[static_cast<size_t>(v)]) {
      depth[static_cast<size_t>(to)] = std::max(depth[static_cast<size_t>(to)], d);
      if (--indegree[static_cast<size_t>(to)] == 0) ready.push_back(to);
    }
  }
  if (done != n) return fail(Result::InvalidArgument, "critical path: the dependencies form a cycle");
  *length = longest;
  return Result::Success;
}

}  // namespace braid::plan
