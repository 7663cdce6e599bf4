// The validator: checks each instruction locally, orders every cell's writes into a chain of
// write groups, finds deadlocks, runs the program symbolically in dependency order, looks for
// write-after-read races, and compares the outputs with the collective's definition.
// docs/PROGRAM.md states the rules for users; the phases below follow it.
#include "dsl/validator.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

#include "dsl/instruction_text.h"
#include "dsl/symbolic_content.h"

namespace braid::dsl {

namespace {

constexpr int kNone = -1;

// The writes of one cell that share a base version: one assign, or unordered accumulates.
struct WriteGroup {
  int start = 0;  // the version its writes depend on
  int end = 0;    // the version once all its writes are done
  bool assign = false;
  std::vector<int> writers;  // node ids, ascending
  int pending = 0;           // writers not yet run symbolically
  bool started = false;
  SymbolicContent content;  // the cell's content at `end` once pending == 0
};

// One piece of storage: a device chunk of a rank (in[] and out[] may alias) or a host slot.
struct Cell {
  int rank = kNone;  // kNone for host slots
  Location name;     // how the first instruction that touched it spelled it
  SymbolicContent initial;
  std::vector<int> writers;  // node ids, ascending
  std::vector<WriteGroup> groups;
  bool broken = false;  // writers do not form a chain of groups (already reported)

  int writes() const { return static_cast<int>(writers.size()); }
  int group_ending_at(int version) const {
    auto it = std::lower_bound(groups.begin(), groups.end(), version,
                               [](const WriteGroup& g, int v) { return g.end < v; });
    return it != groups.end() && it->end == version ? static_cast<int>(it - groups.begin()) : kNone;
  }
  int group_starting_at(int version) const {
    auto it = std::lower_bound(groups.begin(), groups.end(), version,
                               [](const WriteGroup& g, int v) { return g.start < v; });
    return it != groups.end() && it->start == version ? static_cast<int>(it - groups.begin()) : kNone;
  }
};

struct Node {
  int rank = 0;
  int index = 0;
  const Instruction* ins = nullptr;
  int src = kNone;  // cell ids; kNone where the location is invalid
  int dst = kNone;
  std::vector<int> dep_cells;  // parallel to ins->deps
  int src_version = 0;         // the version of src it reads (its largest dependency on src)
  int dst_version = 0;         // its largest dependency on dst: the base of its write group
  int group = kNone;           // index in cells[dst].groups
  // A COPY whose source and destination are one cell (an in-place rank's own chunk): a write that
  // keeps the data and only raises the version; the engine moves no bytes for it.
  bool self_copy = false;
  bool accumulate() const { return ins->op == Opcode::Reduce; }
};

class Validator {
 public:
  Validator(const Program& p, const ValidateOptions& o) : p_(p), options_(o) {}

  ValidationReport run() {
    if (!check_header()) return report_;
    build_nodes();
    check_locations_and_roles();
    if (!report_.ok) return report_;
    collect_writers();
    check_dependency_versions();
    form_write_groups();
    check_dependencies_on_group_ends();
    if (!report_.ok) return report_;
    build_edges();
    if (!order_topologically()) return report_;
    execute_symbolically();
    check_write_after_read();
    if (!report_.ok) return report_;
    check_outputs();
    return report_;
  }

 private:
  // ---- reporting: the lowest (rank, instruction) wins; instruction -1 names a missing output.
  void offer(int rank, int instruction, std::string message) {
    if (!report_.ok && std::pair(rank, instruction) >= std::pair(report_.rank, report_.instruction)) return;
    report_.ok = false;
    report_.rank = rank;
    report_.instruction = instruction;
    report_.message = std::move(message);
  }
  std::string name(int node) const {
    const Node& n = nodes_[node];
    return "rank " + std::to_string(n.rank) + " instruction " + std::to_string(n.index) + " (" +
           instruction_text(*n.ins) + ")";
  }
  void flag(int node, const std::string& message) {
    offer(nodes_[node].rank, nodes_[node].index, name(node) + ": " + message);
  }
  std::string cell_name(int cell) const {
    const Cell& c = cells_[cell];
    std::string s = location_text(c.name);
    if (c.rank != kNone) s += " of rank " + std::to_string(c.rank);
    return s;
  }
  std::string content_text(const SymbolicContent& c) const { return describe(c, in_blocks_); }

  // ---- phase 0: the header
  bool check_header() {
    auto bad = [&](const std::string& m) {
      offer(-1, -1, "program header: " + m);
      return false;
    };
    if (p_.ranks < 1 || p_.ranks > 65536) return bad("ranks must be in 1..65536");
    if (p_.chunks < 1 || p_.chunks > 65536) return bad("chunks must be in 1..65536");
    if (p_.root < 0 || p_.root >= p_.ranks) return bad("root out of range");
    if (static_cast<int>(p_.rank_instructions.size()) != p_.ranks)
      return bad("rank_instructions has " + std::to_string(p_.rank_instructions.size()) +
                 " lists for " + std::to_string(p_.ranks) + " ranks");
    in_blocks_ = input_blocks(p_.collective, p_.ranks);
    in_chunks_ = int64_t{in_blocks_} * p_.chunks;
    out_chunks_ = int64_t{output_blocks(p_.collective, p_.ranks)} * p_.chunks;
    return true;
  }

  // ---- cells
  // Storage index of a device location at `rank`: in[i] -> i, out[j] -> in_chunks + j, or the
  // in[] index it aliases in place.
  int64_t device_storage(int rank, const Location& l) const {
    if (l.buffer == Buffer::Input) return l.index;
    if (options_.in_place) {
      const int C = p_.chunks;
      switch (p_.collective) {
        case Collective::AllReduce:
        case Collective::AllToAll: return l.index;
        case Collective::AllGather:
          if (l.index / C == rank) return l.index % C;
          break;
        case Collective::ReduceScatter: return int64_t{rank} * C + l.index;
        case Collective::Broadcast:
        case Collective::Reduce:
          if (rank == p_.root) return l.index;
          break;
      }
    }
    return in_chunks_ + l.index;
  }

  uint64_t cell_key(int rank, const Location& l) const {
    if (l.is_device())
      return (uint64_t{1} << 63) | (static_cast<uint64_t>(rank) << 34) |
             static_cast<uint64_t>(device_storage(rank, l));
    return (static_cast<uint64_t>(l.numa) << 31) | static_cast<uint64_t>(l.index);
  }

  // What a location holds before any write: a rank's own input chunk, or nothing.
  SymbolicContent initial_content(int rank, const Location& l) const {
    if (l.is_host()) return {};
    const int64_t storage = device_storage(rank, l);
    const bool silent_sender = p_.collective == Collective::Broadcast && rank != p_.root;
    if (storage >= in_chunks_ || silent_sender) return {};
    const int64_t block = storage / p_.chunks;
    return SymbolicContent::single(static_cast<uint32_t>(int64_t{rank} * in_blocks_ + block),
                                   static_cast<int>(storage % p_.chunks));
  }

  // The cell a valid location names at `rank`, created on first use.
  int cell_of(int rank, const Location& l) {
    auto [it, inserted] = cell_ids_.try_emplace(cell_key(rank, l), static_cast<int>(cells_.size()));
    if (inserted) {
      Cell c;
      c.name = l;
      c.rank = l.is_device() ? rank : kNone;
      c.initial = initial_content(rank, l);
      cells_.push_back(std::move(c));
    }
    return it->second;
  }

  // ---- phase 1: each instruction on its own
  void build_nodes() {
    for (int r = 0; r < p_.ranks; ++r)
      for (size_t i = 0; i < p_.rank_instructions[r].size(); ++i) {
        Node n;
        n.rank = r;
        n.index = static_cast<int>(i);
        n.ins = &p_.rank_instructions[r][i];
        nodes_.push_back(std::move(n));
      }
  }

  // Empty when valid, else why not.
  std::string location_problem(const Location& l) const {
    if (l.index < 0) return location_text(l) + " has a negative index";
    switch (l.buffer) {
      case Buffer::Input:
        if (l.index >= in_chunks_)
          return location_text(l) + " is out of range: in[] has " + std::to_string(in_chunks_) + " chunks";
        break;
      case Buffer::Output:
        if (l.index >= out_chunks_)
          return location_text(l) + " is out of range: out[] has " + std::to_string(out_chunks_) + " chunks";
        break;
      case Buffer::Host:
        if (l.numa < 0) return location_text(l) + " names a negative NUMA node";
        break;
    }
    return {};
  }

  void check_locations_and_roles() {
    for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
      Node& n = nodes_[id];
      const Instruction& ins = *n.ins;
      std::string problem = location_problem(ins.src);
      if (problem.empty()) problem = location_problem(ins.dst);
      for (const Dependency& d : ins.deps) {
        if (problem.empty()) problem = location_problem(d.location);
        if (problem.empty() && d.version < 0) problem = "a dependency has a negative version";
      }
      if (!problem.empty()) {
        flag(id, problem);
        continue;
      }
      if (const std::string role = role_problem(ins); !role.empty()) {
        flag(id, role);
        continue;
      }
      if (ins.dst.buffer == Buffer::Input) {
        flag(id, "writes the send buffer " + location_text(ins.dst) +
                     "; only out[] and host slots may be written");
        continue;
      }
      if (p_.collective == Collective::Reduce && ins.dst.buffer == Buffer::Output && n.rank != p_.root) {
        flag(id, "writes out[] of rank " + std::to_string(n.rank) + ", which is not the reduce's root " +
                     std::to_string(p_.root) + " (its receive buffer may be null)");
        continue;
      }
      n.src = cell_of(n.rank, ins.src);
      n.dst = cell_of(n.rank, ins.dst);
      for (const Dependency& d : ins.deps) n.dep_cells.push_back(cell_of(n.rank, d.location));
      if (n.src == n.dst && ins.op == Opcode::Copy) {
        n.self_copy = true;
      } else if (n.src == n.dst) {
        flag(id, ins.src == ins.dst ? "reads and writes the same cell " + cell_name(n.src)
                                    : "reads and writes the same cell: in place, " + location_text(ins.src) +
                                          " and " + location_text(ins.dst) + " are one buffer");
        continue;
      }
      for (size_t k = 0; k < ins.deps.size(); ++k) {
        if (n.dep_cells[k] == n.src) n.src_version = std::max(n.src_version, ins.deps[k].version);
        if (n.dep_cells[k] == n.dst) n.dst_version = std::max(n.dst_version, ins.deps[k].version);
      }
    }
  }

  // The ownership rule of each opcode: which kinds of location it may join.
  static std::string role_problem(const Instruction& ins) {
    const bool src_host = ins.src.is_host(), dst_host = ins.dst.is_host();
    switch (ins.op) {
      case Opcode::D2H:
        if (src_host || !dst_host) return "D2H must copy a device chunk (in[]/out[]) of its rank to a host slot";
        break;
      case Opcode::H2H:
        if (!src_host || !dst_host) return "H2H must copy between host slots";
        if (ins.src.numa == ins.dst.numa)
          return "H2H must cross NUMA nodes, but both slots are on node " + std::to_string(ins.src.numa);
        break;
      case Opcode::H2D:
        if (!src_host || dst_host) return "H2D must copy a host slot to a device chunk (out[]) of its rank";
        break;
      case Opcode::Copy:
        if (src_host || dst_host) return "COPY must copy between device chunks of its rank";
        break;
      case Opcode::Reduce:
        if (!src_host) return "REDUCE must take its source from a host slot";
        break;
    }
    return {};
  }

  // ---- phase 2: versions, write groups, dependencies
  void collect_writers() {
    for (int id = 0; id < static_cast<int>(nodes_.size()); ++id)
      if (nodes_[id].dst != kNone) cells_[nodes_[id].dst].writers.push_back(id);
  }

  void check_dependency_versions() {
    for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
      const Node& n = nodes_[id];
      for (size_t k = 0; k < n.dep_cells.size(); ++k) {
        const Cell& c = cells_[n.dep_cells[k]];
        const int v = n.ins->deps[k].version;
        if (v > c.writes())
          flag(id, "deadlock: waits for " + location_text(n.ins->deps[k].location) + ">=" + std::to_string(v) +
                       ", but the program writes " + cell_name(n.dep_cells[k]) + " only " +
                       std::to_string(c.writes()) + " time(s)");
      }
    }
  }

  // A cell's writes must form groups g0, g1, ...: group k's writes depend on the cell at exactly
  // the version where group k-1 ends (group 0: no dependency), and a group is one assign or any
  // number of accumulates.
  void form_write_groups() {
    for (int cell = 0; cell < static_cast<int>(cells_.size()); ++cell) {
      Cell& c = cells_[cell];
      if (c.writers.empty()) continue;
      std::vector<int> order = c.writers;
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return nodes_[a].dst_version < nodes_[b].dst_version; });
      int expected = 0;
      for (size_t i = 0; i < order.size();) {
        size_t j = i;
        const int start = nodes_[order[i]].dst_version;
        while (j < order.size() && nodes_[order[j]].dst_version == start) ++j;
        WriteGroup g;
        g.start = start;
        g.end = start + static_cast<int>(j - i);
        g.writers.assign(order.begin() + static_cast<long>(i), order.begin() + static_cast<long>(j));
        std::sort(g.writers.begin(), g.writers.end());
        for (int w : g.writers) g.assign |= !nodes_[w].accumulate();
        const std::string at = location_text(nodes_[g.writers[0]].ins->dst);
        if (start != expected) {
          for (int w : g.writers)
            flag(w, "unordered writers: depends on " + location_text(nodes_[w].ins->dst) + ">=" +
                        std::to_string(start) + ", but the writes of " + cell_name(cell) +
                        " ordered before it end at version " + std::to_string(expected) +
                        (start < expected ? " (version " + std::to_string(start) +
                                                " is inside a group of unordered writes)"
                                          : ""));
          c.broken = true;
          break;
        }
        if (g.assign && g.writers.size() > 1) {
          int first_assign = kNone;
          for (int w : g.writers)
            if (first_assign == kNone && !nodes_[w].accumulate()) first_assign = w;
          for (int w : g.writers) {
            if (nodes_[w].accumulate()) {
              flag(w, "unordered writers: accumulates into " + cell_name(cell) + " at version " +
                          std::to_string(start) + ", unordered with " + name(first_assign) +
                          ", which assigns it (an accumulate must depend on the version it adds to)");
              continue;
            }
            const int other = w == g.writers[0] ? g.writers[1] : g.writers[0];
            flag(w, "unordered writers: it and " + name(other) + " both write " + cell_name(cell) +
                        " on version " + std::to_string(start) +
                        " with no order between them; an assign must be alone in its group "
                        "(make the later write depend on the earlier one's version)");
          }
          c.broken = true;
          break;
        }
        if (start == 0 && !g.assign && !c.initial.defined()) {
          for (int w : g.writers)
            flag(w, "accumulates into " + cell_name(cell) + " without a dependency on it, but " +
                        location_text(nodes_[w].ins->dst) + " holds no data before its first write "
                        "(an accumulate must depend on the version it adds to)");
          c.broken = true;
          break;
        }
        g.pending = static_cast<int>(g.writers.size());
        for (int w : g.writers) nodes_[w].group = static_cast<int>(c.groups.size());
        c.groups.push_back(std::move(g));
        expected = c.groups.back().end;
        i = j;
      }
    }
  }

  // Every dependency must name a version where a group ends: inside a group of unordered
  // accumulates, "the first v writes" are not a fixed set of writes.
  void check_dependencies_on_group_ends() {
    for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
      const Node& n = nodes_[id];
      for (size_t k = 0; k < n.dep_cells.size(); ++k) {
        const Cell& c = cells_[n.dep_cells[k]];
        const int v = n.ins->deps[k].version;
        if (c.broken || v == 0 || v > c.writes() || c.group_ending_at(v) != kNone) continue;
        const WriteGroup* inside = nullptr;
        for (const WriteGroup& g : c.groups)
          if (g.start < v && v < g.end) inside = &g;
        std::string message = "reads before data is complete: depends on " +
                              location_text(n.ins->deps[k].location) + ">=" + std::to_string(v) +
                              ", but version " + std::to_string(v) + " of " + cell_name(n.dep_cells[k]);
        if (inside) {
          message += " falls inside a group of " + std::to_string(inside->writers.size()) +
                     " unordered accumulates (versions " + std::to_string(inside->start + 1) + ".." +
                     std::to_string(inside->end) + "); depend on version " + std::to_string(inside->end);
        } else {
          message += " is not where a group of its writes ends";
        }
        flag(id, message);
      }
    }
  }

  // ---- phase 3: the dependency graph and deadlocks
  // Edge w -> x: x waits for w, because x depends on a version whose last group w belongs to.
  // Earlier groups are reached transitively (each group depends on the end of the previous).
  void build_edges() {
    const size_t n = nodes_.size();
    std::vector<std::pair<int, int>> edges;
    for (int x = 0; x < static_cast<int>(n); ++x) {
      const Node& node = nodes_[x];
      for (size_t k = 0; k < node.dep_cells.size(); ++k) {
        const int v = node.ins->deps[k].version;
        if (v == 0) continue;
        const Cell& c = cells_[node.dep_cells[k]];
        for (int w : c.groups[c.group_ending_at(v)].writers) edges.push_back({w, x});
      }
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    succ_begin_.assign(n + 1, 0);
    pred_begin_.assign(n + 1, 0);
    for (auto [w, x] : edges) {
      ++succ_begin_[w + 1];
      ++pred_begin_[x + 1];
    }
    for (size_t i = 0; i < n; ++i) {
      succ_begin_[i + 1] += succ_begin_[i];
      pred_begin_[i + 1] += pred_begin_[i];
    }
    succ_.resize(edges.size());
    pred_.resize(edges.size());
    std::vector<int> s_fill(succ_begin_.begin(), succ_begin_.end() - 1);
    std::vector<int> p_fill(pred_begin_.begin(), pred_begin_.end() - 1);
    for (auto [w, x] : edges) {
      succ_[s_fill[w]++] = x;
      pred_[p_fill[x]++] = w;
    }
  }

  bool order_topologically() {
    const int n = static_cast<int>(nodes_.size());
    std::vector<int> indegree(n);
    for (int x = 0; x < n; ++x) indegree[x] = pred_begin_[x + 1] - pred_begin_[x];
    topo_.clear();
    for (int x = 0; x < n; ++x)
      if (indegree[x] == 0) topo_.push_back(x);
    for (size_t i = 0; i < topo_.size(); ++i)
      for (int e = succ_begin_[topo_[i]]; e < succ_begin_[topo_[i] + 1]; ++e)
        if (--indegree[succ_[e]] == 0) topo_.push_back(succ_[e]);
    if (static_cast<int>(topo_.size()) == n) {
      position_.assign(n, 0);
      for (int i = 0; i < n; ++i) position_[topo_[i]] = i;
      return true;
    }
    report_cycle(indegree);
    return false;
  }

  // Nodes left with indegree > 0 lie on or after a cycle; name the lowest one on a cycle.
  void report_cycle(const std::vector<int>& indegree) {
    const int n = static_cast<int>(nodes_.size());
    std::vector<int> parent(n, kNone);
    std::vector<int> seen(n, kNone);
    for (int start = 0; start < n; ++start) {
      if (indegree[start] == 0) continue;
      // Breadth-first over predecessors ("waits on") among the blocked nodes, back to start.
      std::deque<int> queue = {start};
      seen[start] = start;
      int closing = kNone;
      while (!queue.empty() && closing == kNone) {
        const int x = queue.front();
        queue.pop_front();
        for (int e = pred_begin_[x]; e < pred_begin_[x + 1]; ++e) {
          const int w = pred_[e];
          if (indegree[w] == 0) continue;
          if (w == start) {
            closing = x;
            break;
          }
          if (seen[w] == start) continue;
          seen[w] = start;
          parent[w] = x;
          queue.push_back(w);
        }
      }
      if (closing == kNone) continue;
      std::vector<int> chain;  // start waits on chain[0], which waits on chain[1], ...
      for (int x = closing; x != start; x = parent[x]) chain.push_back(x);
      std::reverse(chain.begin(), chain.end());
      std::string message = "deadlock: its dependencies form a cycle: it waits on ";
      for (size_t i = 0; i < chain.size() && i < 6; ++i) message += name(chain[i]) + ", which waits on ";
      if (chain.size() > 6) message += "... ";
      message += "it";
      flag(start, message);
      return;
    }
    offer(-1, -1, "deadlock: the dependency graph has a cycle");  // unreachable in practice
  }

  // ---- phase 4: symbolic execution in dependency order
  const SymbolicContent& content_at(int cell, int version) const {
    const Cell& c = cells_[cell];
    if (version == 0) return c.initial;
    return c.groups[c.group_ending_at(version)].content;
  }

  std::string versions_hint(int cell) const {
    const Cell& c = cells_[cell];
    std::string s;
    for (size_t g = 0; g < c.groups.size() && g < 6; ++g) s += (g ? ", " : "") + std::to_string(c.groups[g].end);
    if (c.groups.size() > 6) s += ", ...";
    return s;
  }

  void execute_symbolically() {
    const int C = p_.chunks;
    for (int x : topo_) {
      Node& n = nodes_[x];
      const Instruction& ins = *n.ins;
      const SymbolicContent& src = content_at(n.src, n.src_version);
      bool ok = src.defined();
      if (src.state == SymbolicContent::State::Undefined) {
        std::string m = "reads undefined data: " + location_text(ins.src) + " at version " +
                        std::to_string(n.src_version);
        if (cells_[n.src].writers.empty()) {
          m += ", and nothing in the program writes " + cell_name(n.src);
        } else if (n.src_version == 0) {
          m += " (it has no dependency on " + location_text(ins.src) +
               "); writes of it complete versions " + versions_hint(n.src);
        }
        flag(x, m);
      }
      if (ok && ins.dst.is_device() && src.part != ins.dst.index % C) {
        flag(x, "part mismatch: " + location_text(ins.src) + " holds part " + std::to_string(src.part) +
                    " of a block but " + location_text(ins.dst) + " is part " + std::to_string(ins.dst.index % C));
        ok = false;
      }
      Cell& dst = cells_[n.dst];
      WriteGroup& g = dst.groups[n.group];
      if (!n.accumulate()) {
        g.content = ok ? src : SymbolicContent::poisoned();
      } else {
        if (!g.started) {
          g.content = content_at(n.dst, g.start);
          g.started = true;
        }
        if (g.content.defined() && ok) {
          if (g.content.part != src.part) {
            flag(x, "part mismatch: adds part " + std::to_string(src.part) + " (from " +
                        location_text(ins.src) + ") into " + location_text(ins.dst) + ", which holds part " +
                        std::to_string(g.content.part));
            g.content = SymbolicContent::poisoned();
          } else {
            g.content = accumulate(g.content, src);
          }
        } else if (g.content.state == SymbolicContent::State::Undefined) {
          flag(x, "reads undefined data: accumulates into " + location_text(ins.dst) + " at version " +
                      std::to_string(g.start) + ", which holds no data");
          g.content = SymbolicContent::poisoned();
        } else {
          g.content = SymbolicContent::poisoned();
        }
      }
      --g.pending;
    }
  }

  // ---- phase 5: a write after version v must wait for every reader of version v.
  void check_write_after_read() {
    std::vector<int> visit_mark(nodes_.size(), kNone);
    std::vector<int> target_mark(nodes_.size(), kNone);
    std::vector<int> stack;
    for (int x = 0; x < static_cast<int>(nodes_.size()); ++x) {
      const Node& n = nodes_[x];
      const Cell& c = cells_[n.src];
      int g = c.group_starting_at(n.src_version);
      // Self-copies change no data: the write that matters is the first real one after them.
      while (g != kNone && c.groups[g].writers.size() == 1 && nodes_[c.groups[g].writers[0]].self_copy)
        g = c.group_starting_at(c.groups[g].end);
      if (g == kNone) continue;  // nothing overwrites what it reads
      // Reading nothing is reported as such; the later writes are not to blame.
      if (!content_at(n.src, n.src_version).defined()) continue;
      const std::vector<int>& targets = c.groups[g].writers;
      int remaining = 0, last = 0;
      for (int w : targets) {
        target_mark[w] = x;
        ++remaining;
        last = std::max(last, position_[w]);
      }
      // Depth-first over successors; nodes later in topological order than every target
      // cannot lead to one.
      stack.assign(1, x);
      visit_mark[x] = x;
      while (!stack.empty() && remaining > 0) {
        const int y = stack.back();
        stack.pop_back();
        for (int e = succ_begin_[y]; e < succ_begin_[y + 1]; ++e) {
          const int s = succ_[e];
          if (visit_mark[s] == x) continue;
          visit_mark[s] = x;
          if (target_mark[s] == x) --remaining;
          if (position_[s] < last) stack.push_back(s);
        }
      }
      if (remaining == 0) continue;
      for (int w : targets)
        if (visit_mark[w] != x)
          flag(w, "write-after-read race: overwrites " + cell_name(n.src) + " (after version " +
                      std::to_string(n.src_version) + ") without waiting for " + name(x) +
                      ", which reads that version");
    }
  }

  // ---- phase 6: the outputs against the collective's definition
  SymbolicContent expected_output(int rank, int64_t index) const {
    const int C = p_.chunks, R = p_.ranks;
    const int part = static_cast<int>(index % C);
    const int block = static_cast<int>(index / C);
    SymbolicContent e;
    e.state = SymbolicContent::State::Defined;
    e.part = part;
    auto add = [&](int64_t contributor) { e.terms.push_back({static_cast<uint32_t>(contributor), 1}); };
    switch (p_.collective) {
      case Collective::AllReduce:
      case Collective::Reduce:
        for (int q = 0; q < R; ++q) add(q);
        break;
      case Collective::AllGather: add(block); break;
      case Collective::ReduceScatter:
        for (int q = 0; q < R; ++q) add(int64_t{q} * R + rank);
        break;
      case Collective::Broadcast: add(p_.root); break;
      case Collective::AllToAll: add(int64_t{block} * R + rank); break;
    }
    return e;
  }

  // Ranks in order, so the scan can stop once nothing later could be reported first.
  void check_outputs() {
    for (int r = 0; r < p_.ranks; ++r) {
      if (!report_.ok && report_.rank < r) return;
      if (p_.collective == Collective::Reduce && r != p_.root) continue;
      for (int64_t j = 0; j < out_chunks_; ++j) {
        const Location l{Buffer::Output, 0, static_cast<int>(j)};
        const auto found = cell_ids_.find(cell_key(r, l));
        const Cell* c = found == cell_ids_.end() ? nullptr : &cells_[found->second];
        const SymbolicContent untouched = c ? SymbolicContent{} : initial_content(r, l);
        const SymbolicContent& got = c ? content_at(found->second, c->writes()) : untouched;
        const SymbolicContent expected = expected_output(r, j);
        if (got == expected) continue;
        const std::string need = std::string(collective_name(p_.collective)) + " needs " +
                                 content_text(expected) + " there";
        if (!c || c->writers.empty()) {
          offer(r, -1, "rank " + std::to_string(r) + " " + location_text(l) + " is never written (holds " +
                           content_text(got) + "); " + need);
          break;  // nothing else on this rank can come first
        }
        flag(c->groups.back().writers.front(), "wrong result: rank " + std::to_string(r) + " " +
                                                   location_text(l) + " ends as " + content_text(got) + "; " + need);
      }
    }
  }

  const Program& p_;
  ValidateOptions options_;
  ValidationReport report_;
  int in_blocks_ = 1;
  int64_t in_chunks_ = 0;
  int64_t out_chunks_ = 0;
  std::vector<Node> nodes_;
  std::vector<Cell> cells_;
  std::unordered_map<uint64_t, int> cell_ids_;
  std::vector<int> succ_begin_, succ_, pred_begin_, pred_;
  std::vector<int> topo_, position_;
};

}  // namespace

ValidationReport validate(const Program& p, const ValidateOptions& options) {
  return Validator(p, options).run();
}

}  // namespace braid::dsl
