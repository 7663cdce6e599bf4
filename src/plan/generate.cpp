// The hierarchical (HyLink Fig. 1(c)) and ring generators. Programs are built in phases over
// all data items (uploads, local reductions, crossings, downloads), so every rank's list is in
// causal order and the first uploads of every chunk are issued before any download waits.
#include "plan/generate.h"

#include <algorithm>
#include <numeric>

#include "common/log.h"
#include "common/settings.h"
#include "plan/cost.h"
#include "plan/program_builder.h"

namespace braid::plan {

using dsl::Buffer;
using dsl::Location;
using dsl::Opcode;

std::string_view placement_name(ReducePlacement p) {
  switch (p) {
    case ReducePlacement::Host: return "host";
    case ReducePlacement::Device: return "device";
    case ReducePlacement::Auto: return "auto";
  }
  return "?";
}

std::string_view algorithm_name(GenerateOptions::Algorithm a) {
  switch (a) {
    case GenerateOptions::Algorithm::Ring: return "ring";
    case GenerateOptions::Algorithm::Auto: return "auto";
    default: return "hierarchical";
  }
}

bool has_algorithm(Collective collective, GenerateOptions::Algorithm algorithm) {
  return algorithm != GenerateOptions::Algorithm::Ring || collective == Collective::AllGather ||
         collective == Collective::AllReduce;
}

Result apply_settings(GenerateOptions* options) {
  const Settings& s = settings();
  if (s.chunks < 0 || s.chunks > 65536)
    return fail(Result::InvalidArgument, "BRAID_CHUNKS must be 0..65536, got %lld", static_cast<long long>(s.chunks));
  // A Choice: the settings layer admits only auto, host and device.
  options->placement = s.reduce_placement == "host"     ? ReducePlacement::Host
                       : s.reduce_placement == "device" ? ReducePlacement::Device
                                                        : ReducePlacement::Auto;
  options->chunks = static_cast<int>(s.chunks);
  options->algorithm = s.algorithm == "ring"   ? GenerateOptions::Algorithm::Ring
                       : s.algorithm == "auto" ? GenerateOptions::Algorithm::Auto
                                               : GenerateOptions::Algorithm::Hierarchical;
  options->deterministic = s.deterministic;
  return Result::Success;
}

size_t count_for_bytes(Collective collective, int ranks, size_t bytes, DataType dtype) {
  size_t per = datatype_size(dtype);
  if (collective == Collective::AllGather || collective == Collective::ReduceScatter ||
      collective == Collective::AllToAll)
    per *= static_cast<size_t>(std::max(ranks, 1));
  return std::max<size_t>(1, bytes / per);
}

namespace {

Location in_loc(int index) { return Location{Buffer::Input, 0, index}; }
Location out_loc(int index) { return Location{Buffer::Output, 0, index}; }
constexpr int kNone = -1;

// Where ranks sit and who executes the CPU-side work on each NUMA node.
struct Placement {
  std::vector<int> numa_of_rank;
  std::vector<int> nodes;                   // NUMA indices that hold ranks, ascending
  std::vector<std::vector<int>> ranks_on;   // by NUMA index
  std::vector<int> server_of_numa;          // by NUMA index
  std::vector<int> next_executor;           // round-robin position per NUMA index

  int numa_count() const { return static_cast<int>(ranks_on.size()); }
  int executor_on(int numa) {
    const auto& list = ranks_on[static_cast<size_t>(numa)];
    int& at = next_executor[static_cast<size_t>(numa)];
    const int r = list[static_cast<size_t>(at) % list.size()];
    at = (at + 1) % static_cast<int>(list.size());
    return r;
  }
};

Placement place_ranks(const topo::Topology& t, int ranks) {
  Placement p;
  p.numa_of_rank = topo::rank_numa(t, ranks);
  int numa_count = std::max<int>(1, static_cast<int>(t.numa_nodes().size()));
  for (int n : p.numa_of_rank) numa_count = std::max(numa_count, n + 1);
  p.ranks_on.assign(static_cast<size_t>(numa_count), {});
  p.next_executor.assign(static_cast<size_t>(numa_count), 0);
  p.server_of_numa.assign(static_cast<size_t>(numa_count), 0);
  const auto numa_ids = t.numa_nodes();
  for (size_t i = 0; i < numa_ids.size(); ++i)
    p.server_of_numa[i] = t.nodes[static_cast<size_t>(numa_ids[i])].server;
  for (int r = 0; r < ranks; ++r) p.ranks_on[static_cast<size_t>(p.numa_of_rank[r])].push_back(r);
  for (int n = 0; n < numa_count; ++n)
    if (!p.ranks_on[static_cast<size_t>(n)].empty()) p.nodes.push_back(n);
  return p;
}

// NCCL's in-place aliasing (validator.h): the input chunk a write to out[index] of `rank`
// overwrites, or kNone.
int aliased_input(Collective c, int rank, int root, int chunks, int out_index) {
  switch (c) {
    case Collective::AllReduce:
    case Collective::AllToAll: return out_index;
    case Collective::AllGather: {
      const int i = out_index - rank * chunks;
      return (i >= 0 && i < chunks) ? i : kNone;
    }
    case Collective::ReduceScatter: return rank * chunks + out_index;
    case Collective::Broadcast:
    case Collective::Reduce: return rank == root ? out_index : kNone;
  }
  return kNone;
}

// A data item that leaves a rank's in[] for other ranks: uploaded once, spread to the nodes of
// the ranks that take it from host memory.
struct Flow {
  int src_rank = 0;
  int in_index = 0;
  std::vector<int> host_consumers;  // ranks that H2D or device-REDUCE it
  Location upload{};
  std::vector<Location> at;  // by NUMA index; index kNone where absent
};

// A host-placement reduction of one chunk: contributions accumulate per node, then at home.
struct HostSum {
  std::vector<int> contributors;  // ranks, each adding its in[in_index]
  int in_index = 0;
  int home = 0;                   // NUMA index
  std::vector<int> consumers;     // ranks receiving out[out_index]
  int out_index = 0;
  std::vector<Location> partial;  // by NUMA index: the node's accumulator (index kNone: none)
  std::vector<Location> at;       // by NUMA index: the result
};

class Generator {
 public:
  Generator(Collective c, int ranks, int chunks, const topo::Topology& t,
            const GenerateOptions& o, dsl::Program* p)
      : collective_(c), ranks_(ranks), chunks_(chunks), options_(o), place_(place_ranks(t, ranks)),
        builder_(p, place_.numa_count()), uploads_(static_cast<size_t>(ranks)) {}

  void hierarchical();
  void ring_allgather();
  void ring_allreduce();

 private:
  int numa(int rank) const { return place_.numa_of_rank[static_cast<size_t>(rank)]; }
  bool host_placement() const { return options_.placement != ReducePlacement::Device; }

  Location upload(int rank, int in_index);
  // The first write of out[out_index] on `rank`; in-place it overwrites an input chunk, so it
  // waits for that chunk's uploads.
  void first_write(int rank, Opcode op, Location src, int out_index);
  std::vector<Location> spread(Location src, const std::vector<int>& target_nodes);

  void upload_flows(std::vector<Flow>& flows);
  void spread_flows(std::vector<Flow>& flows);
  void run_host_sums(std::vector<HostSum>& sums);
  // Device placement: `order` lists the contributing ranks in the fixed reduction order.
  void device_sum_into(int rank, int out_index, const std::vector<int>& order, int in_index,
                       const std::vector<Flow*>& flow_of_rank);

  void gather_collective();
  void reduce_collective();

  Collective collective_;
  int ranks_;
  int chunks_;
  GenerateOptions options_;
  Placement place_;
  ProgramBuilder builder_;
  std::vector<std::vector<std::pair<int, Location>>> uploads_;  // per rank: (in index, slot)
};

Location Generator::upload(int rank, int in_index) {
  const Location slot = builder_.new_slot(numa(rank));
  builder_.assign(rank, Opcode::D2H, in_loc(in_index), slot);
  uploads_[static_cast<size_t>(rank)].emplace_back(in_index, slot);
  return slot;
}

void Generator::first_write(int rank, Opcode op, Location src, int out_index) {
  std::vector<Location> after;
  const int alias = aliased_input(collective_, rank, options_.root, chunks_, out_index);
  if (alias != kNone)
    for (const auto& [index, slot] : uploads_[static_cast<size_t>(rank)])
      if (index == alias) after.push_back(slot);
  builder_.assign(rank, op, src, out_loc(out_index), after);
}

std::vector<Location> Generator::spread(Location src, const std::vector<int>& target_nodes) {
  std::vector<Location> at(static_cast<size_t>(place_.numa_count()), Location{Buffer::Host, 0, kNone});
  at[static_cast<size_t>(src.numa)] = src;
  auto hop = [&](Location from, int to) {
    const Location slot = builder_.new_slot(to);
    builder_.assign(place_.executor_on(to), Opcode::H2H, from, slot);
    at[static_cast<size_t>(to)] = slot;
  };
  const int home_server = place_.server_of_numa[static_cast<size_t>(src.numa)];
  // Same server: one H2H each. Another server: one crossing to a gateway node of that server
  // (the first target there), then H2H inside the server.
  std::vector<int> gateway_of_server;
  for (int n : target_nodes) {
    if (at[static_cast<size_t>(n)].index != kNone) continue;
    const int server = place_.server_of_numa[static_cast<size_t>(n)];
    if (server == home_server) {
      hop(src, n);
      continue;
    }
    if (static_cast<size_t>(server) >= gateway_of_server.size())
      gateway_of_server.resize(static_cast<size_t>(server) + 1, kNone);
    int& gateway = gateway_of_server[static_cast<size_t>(server)];
    if (gateway == kNone) {
      gateway = n;
      hop(src, n);
    } else {
      hop(at[static_cast<size_t>(gateway)], n);
    }
  }
  return at;
}

void Generator::upload_flows(std::vector<Flow>& flows) {
  for (Flow& f : flows)
    if (!f.host_consumers.empty()) f.upload = upload(f.src_rank, f.in_index);
}

void Generator::spread_flows(std::vector<Flow>& flows) {
  for (Flow& f : flows) {
    if (f.host_consumers.empty()) continue;
    std::vector<int> targets;
    for (int c : f.host_consumers) targets.push_back(numa(c));
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    f.at = spread(f.upload, targets);
  }
}

void Generator::run_host_sums(std::vector<HostSum>& sums) {
  const bool ordered = options_.deterministic;
  const auto none = Location{Buffer::Host, 0, kNone};
  // 1. Every contributor uploads once to its own node.
  std::vector<std::vector<std::vector<Location>>> local(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    local[i].assign(static_cast<size_t>(place_.numa_count()), {});
    for (int q : sums[i].contributors)
      local[i][static_cast<size_t>(numa(q))].push_back(upload(q, sums[i].in_index));
  }
  // 2. Per node, the first upload's slot accumulates the node's other contributions.
  for (size_t i = 0; i < sums.size(); ++i) {
    sums[i].partial.assign(static_cast<size_t>(place_.numa_count()), none);
    for (int n : place_.nodes) {
      const auto& slots = local[i][static_cast<size_t>(n)];
      if (slots.empty()) continue;
      for (size_t k = 1; k < slots.size(); ++k)
        builder_.accumulate(place_.executor_on(n), slots[k], slots[0], ordered);
      sums[i].partial[static_cast<size_t>(n)] = slots[0];
    }
  }
  // 3. The partial sums travel once to the chunk's home and are reduced there. Partials from
  // another server first meet at that server's gateway node, so each crosses servers once.
  auto fold_into = [&](HostSum& s, int from, int into) {
    const Location moved = builder_.new_slot(into);
    const int executor = place_.executor_on(into);
    builder_.assign(executor, Opcode::H2H, s.partial[static_cast<size_t>(from)], moved);
    Location& acc = s.partial[static_cast<size_t>(into)];
    if (acc.index == kNone) {
      acc = moved;
    } else {
      builder_.accumulate(place_.executor_on(into), moved, acc, ordered);
    }
    s.partial[static_cast<size_t>(from)] = none;
  };
  for (HostSum& s : sums) {
    const int home_server = place_.server_of_numa[static_cast<size_t>(s.home)];
    std::vector<int> gateway_of_server;
    for (int n : place_.nodes) {
      const int server = place_.server_of_numa[static_cast<size_t>(n)];
      if (server == home_server || s.partial[static_cast<size_t>(n)].index == kNone) continue;
      if (static_cast<size_t>(server) >= gateway_of_server.size())
        gateway_of_server.resize(static_cast<size_t>(server) + 1, kNone);
      int& gateway = gateway_of_server[static_cast<size_t>(server)];
      if (gateway == kNone) gateway = n;
      else fold_into(s, n, gateway);
    }
  }
  for (HostSum& s : sums)
    for (int n : place_.nodes)
      if (n != s.home && s.partial[static_cast<size_t>(n)].index != kNone) fold_into(s, n, s.home);
  // 4. The result travels once to every node with a consumer; 5. each consumer downloads it.
  for (HostSum& s : sums) {
    std::vector<int> targets;
    for (int c : s.consumers) targets.push_back(numa(c));
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    s.at = spread(s.partial[static_cast<size_t>(s.home)], targets);
  }
  for (HostSum& s : sums)
    for (int c : s.consumers)
      first_write(c, Opcode::H2D, s.at[static_cast<size_t>(numa(c))], s.out_index);
}

void Generator::device_sum_into(int rank, int out_index, const std::vector<int>& order,
                                int in_index, const std::vector<Flow*>& flow_of_rank) {
  auto from_host = [&](int q) { return flow_of_rank[static_cast<size_t>(q)]->at[static_cast<size_t>(numa(rank))]; };
  // The first two of the order may start from either end: the kernels combine commutatively bit
  // for bit (min/max order their zeros), so the second rank starts from its own chunk too and
  // downloads one chunk less.
  if (order.size() >= 2 && order[1] == rank) {
    std::vector<int> swapped = order;
    std::swap(swapped[0], swapped[1]);
    device_sum_into(rank, out_index, swapped, in_index, flow_of_rank);
    return;
  }
  if (order[0] == rank) first_write(rank, Opcode::Copy, in_loc(in_index), out_index);
  else first_write(rank, Opcode::H2D, from_host(order[0]), out_index);
  for (size_t k = 1; k < order.size(); ++k)
    builder_.accumulate(rank, from_host(order[k]), out_loc(out_index), /*ordered=*/true);
}

// AllGather, Broadcast, AllToAll: each item goes from one rank's in[] to some ranks' out[].
void Generator::gather_collective() {
  struct Delivery {
    size_t flow;
    int rank;
    int out_index;
  };
  std::vector<Flow> flows;
  std::vector<Delivery> deliveries;
  auto add = [&](int src, int in_index, const std::vector<std::pair<int, int>>& to) {
    Flow f{src, in_index, {}, {}, {}};
    for (const auto& [rank, out_index] : to) {
      if (rank != src) f.host_consumers.push_back(rank);
      deliveries.push_back({flows.size(), rank, out_index});
    }
    flows.push_back(std::move(f));
  };
  const int C = chunks_;
  for (int p = 0; p < C; ++p) {
    switch (collective_) {
      case Collective::AllGather:
        for (int q = 0; q < ranks_; ++q) {
          std::vector<std::pair<int, int>> to;
          for (int r = 0; r < ranks_; ++r) to.emplace_back(r, q * C + p);
          add(q, p, to);
        }
        break;
      case Collective::Broadcast: {
        std::vector<std::pair<int, int>> to;
        for (int r = 0; r < ranks_; ++r) to.emplace_back(r, p);
        add(options_.root, p, to);
        break;
      }
      case Collective::AllToAll:
        for (int q = 0; q < ranks_; ++q)
          for (int r = 0; r < ranks_; ++r) add(q, r * C + p, {{r, q * C + p}});
        break;
      default: break;
    }
  }
  upload_flows(flows);
  spread_flows(flows);
  for (const Delivery& d : deliveries) {
    const Flow& f = flows[d.flow];
    if (d.rank == f.src_rank) first_write(d.rank, Opcode::Copy, in_loc(f.in_index), d.out_index);
    else first_write(d.rank, Opcode::H2D, f.at[static_cast<size_t>(numa(d.rank))], d.out_index);
  }
}

// AllReduce, ReduceScatter, Reduce.
void Generator::reduce_collective() {
  const int C = chunks_;
  std::vector<int> all(static_cast<size_t>(ranks_));
  std::iota(all.begin(), all.end(), 0);
  // One reduction per output chunk: (in index, consumers, out index, home node).
  struct Target {
    int in_index;
    std::vector<int> consumers;
    int out_index;
    int home;
    int first;  // device placement: the rank that starts the fixed order
  };
  std::vector<Target> targets;
  const int node_count = static_cast<int>(place_.nodes.size());
  for (int p = 0; p < C; ++p) {
    switch (collective_) {
      case Collective::AllReduce:
        targets.push_back({p, all, p, place_.nodes[static_cast<size_t>(p % node_count)], p % ranks_});
        break;
      case Collective::Reduce:
        targets.push_back({p, {options_.root}, p, numa(options_.root), options_.root});
        break;
      case Collective::ReduceScatter:
        for (int b = 0; b < ranks_; ++b) targets.push_back({b * C + p, {b}, p, numa(b), b});
        break;
      default: break;
    }
  }
  if (host_placement()) {
    std::vector<HostSum> sums;
    for (const Target& t : targets)
      sums.push_back({all, t.in_index, t.home, t.consumers, t.out_index, {}, {}});
    run_host_sums(sums);
    return;
  }
  // Device placement: every contribution crosses to each consumer's node once; consumers reduce
  // in the order first, first+1, ... (mod ranks), the same on every rank.
  std::vector<Flow> flows;
  for (const Target& t : targets)
    for (int q = 0; q < ranks_; ++q) {
      Flow f{q, t.in_index, {}, {}, {}};
      for (int c : t.consumers)
        if (!(c == q && (q == t.first || q == (t.first + 1) % ranks_))) f.host_consumers.push_back(c);
      flows.push_back(std::move(f));
    }
  upload_flows(flows);
  spread_flows(flows);
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    std::vector<Flow*> flow_of_rank;
    for (int q = 0; q < ranks_; ++q) flow_of_rank.push_back(&flows[i * static_cast<size_t>(ranks_) + static_cast<size_t>(q)]);
    std::vector<int> order;
    for (int k = 0; k < ranks_; ++k) order.push_back((t.first + k) % ranks_);
    for (int c : t.consumers) device_sum_into(c, t.out_index, order, t.in_index, flow_of_rank);
  }
}

void Generator::hierarchical() {
  if (collective_reduces(collective_)) reduce_collective();
  else gather_collective();
}

// Host-staged ring in rank order: at step s rank r passes block (r - s) to r + 1 through a slot on
// its node (and an H2H when r + 1 lives on another node).
void Generator::ring_allgather() {
  const int C = chunks_;
  const int R = ranks_;
  auto pass = [&](int from, Location src, int to, int out_index) {
    const Location slot = builder_.new_slot(numa(from));
    builder_.assign(from, Opcode::D2H, src, slot);
    if (src.buffer == Buffer::Input) uploads_[static_cast<size_t>(from)].emplace_back(src.index, slot);
    Location there = slot;
    if (numa(to) != numa(from)) {
      there = builder_.new_slot(numa(to));
      builder_.assign(to, Opcode::H2H, slot, there);
    }
    first_write(to, Opcode::H2D, there, out_index);
  };
  for (int s = 0; s + 1 < R; ++s)
    for (int p = 0; p < C; ++p)
      for (int r = 0; r < R; ++r) {
        const int b = ((r - s) % R + R) % R;
        pass(r, s == 0 ? in_loc(p) : out_loc(b * C + p), (r + 1) % R, b * C + p);
      }
  for (int p = 0; p < C; ++p)
    for (int r = 0; r < R; ++r) first_write(r, Opcode::Copy, in_loc(p), r * C + p);
}

// Ring reduce-scatter (the receiver reduces on its GPU) then ring all-gather; chunk p is
// completed by rank p % R.
void Generator::ring_allreduce() {
  const int C = chunks_;
  const int R = ranks_;
  auto stage = [&](int from, Location src, int to) {
    const Location slot = builder_.new_slot(numa(from));
    builder_.assign(from, Opcode::D2H, src, slot);
    if (src.buffer == Buffer::Input) uploads_[static_cast<size_t>(from)].emplace_back(src.index, slot);
    if (numa(to) == numa(from)) return slot;
    const Location there = builder_.new_slot(numa(to));
    builder_.assign(to, Opcode::H2H, slot, there);
    return there;
  };
  for (int s = 0; s + 1 < R; ++s)
    for (int p = 0; p < C; ++p) {
      const int start = (p % R + 1) % R;
      const int from = (start + s) % R;
      const int to = (from + 1) % R;
      const Location staged = stage(from, s == 0 ? in_loc(p) : out_loc(p), to);
      first_write(to, Opcode::Copy, in_loc(p), p);
      builder_.accumulate(to, staged, out_loc(p), /*ordered=*/true);
    }
  for (int s = 0; s + 1 < R; ++s)
    for (int p = 0; p < C; ++p) {
      const int from = (p % R + s) % R;
      const int to = (from + 1) % R;
      const Location staged = stage(from, out_loc(p), to);
      if (builder_.version(to, out_loc(p)) > 0) builder_.assign(to, Opcode::H2D, staged, out_loc(p));
      else first_write(to, Opcode::H2D, staged, p);
    }
}

Result check_arguments(Collective c, int ranks, const GenerateOptions& o) {
  if (static_cast<int>(c) < 0 || static_cast<int>(c) >= kNumCollectives)
    return fail(Result::InvalidArgument, "generate: unknown collective %d", static_cast<int>(c));
  if (ranks < 1 || ranks > 65536)
    return fail(Result::InvalidArgument, "generate: ranks must be 1..65536, got %d", ranks);
  if (o.chunks < 0 || o.chunks > 65536)
    return fail(Result::InvalidArgument, "generate: chunks must be 0..65536, got %d", o.chunks);
  if ((c == Collective::Broadcast || c == Collective::Reduce) && (o.root < 0 || o.root >= ranks))
    return fail(Result::InvalidArgument, "generate: root %d is not a rank of %d", o.root, ranks);
  if (o.algorithm == GenerateOptions::Algorithm::Ring && c != Collective::AllGather &&
      c != Collective::AllReduce)
    return fail(Result::InvalidArgument, "generate: ring is implemented for allgather and allreduce only (asked for %s)",
                std::string(collective_name(c)).c_str());
  // AllToAll moves ranks^2 * chunks items; keep programs within what the engine can hold.
  const double items = static_cast<double>(ranks) * ranks * std::max(o.chunks, 1);
  if (items > 64.0 * 1024 * 1024)
    return fail(Result::InvalidArgument, "generate: %d ranks x %d chunks makes too large a program", ranks, o.chunks);
  return Result::Success;
}

}  // namespace

Result resolve_choices(Collective collective, int ranks, const topo::Topology& topology, GenerateOptions* o) {
  if (!collective_reduces(collective) && o->placement == ReducePlacement::Auto) o->placement = ReducePlacement::Host;
  if (o->chunks > 0 && o->placement != ReducePlacement::Auto && o->algorithm != GenerateOptions::Algorithm::Auto)
    return Result::Success;
  ChooseOptions ch;
  if (o->algorithm == GenerateOptions::Algorithm::Auto) ch.algorithm.reset();
  else ch.algorithm = o->algorithm;
  ch.deterministic = o->deterministic;
  ch.root = o->root;
  if (o->chunks > 0) ch.chunks = o->chunks;
  if (o->placement != ReducePlacement::Auto) ch.placement = o->placement;
  PlanChoice choice;
  BRAID_TRY(choose_plan(collective, ranks, topology, o->bytes, o->dtype, ch, &choice));
  o->chunks = choice.chunks;
  o->placement = choice.placement;
  o->algorithm = choice.algorithm;
  return Result::Success;
}

Result generate(Collective collective, int ranks, const topo::Topology& topology,
                const GenerateOptions& options, dsl::Program* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "generate: null program");
  BRAID_TRY(check_arguments(collective, ranks, options));
  GenerateOptions o = options;
  BRAID_TRY(resolve_choices(collective, ranks, topology, &o));

  dsl::Program p;
  p.collective = collective;
  p.ranks = ranks;
  p.chunks = o.chunks;
  p.root = (collective == Collective::Broadcast || collective == Collective::Reduce) ? o.root : 0;
  p.rank_instructions.assign(static_cast<size_t>(ranks), {});
  if (ranks == 1) {
    // One rank: every chunk is its own result.
    const int n = dsl::output_blocks(collective, 1) * o.chunks;
    for (int i = 0; i < n; ++i) p.rank_instructions[0].push_back({Opcode::Copy, in_loc(i), out_loc(i), {}});
  } else {
    Generator g(collective, ranks, o.chunks, topology, o, &p);
    if (o.algorithm == GenerateOptions::Algorithm::Ring) {
      if (collective == Collective::AllGather) g.ring_allgather();
      else g.ring_allreduce();
    } else {
      g.hierarchical();
    }
  }
  *out = std::move(p);
  BRAID_INFO(Plan, "generated %s ranks=%d chunks=%d placement=%s algorithm=%s",
             std::string(collective_name(collective)).c_str(), ranks, o.chunks,
             std::string(placement_name(o.placement)).c_str(),
             std::string(algorithm_name(o.algorithm)).c_str());
  return Result::Success;
}

}  // namespace braid::plan
