#include "route/grouped_exchange.h"

#include <algorithm>
#include <utility>

namespace braid::route {

namespace {

// Folds the number of flows and each one's size, in order, into one word: equal words mean the
// k-th flow has the same size on both ends for every k (up to a 64-bit collision).
uint64_t fingerprint(const std::vector<FlowBuffer>& flows) {
  auto mix = [](uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
  };
  uint64_t h = mix(0x6272616964666c77ull, flows.size());
  for (const FlowBuffer& f : flows) h = mix(h, f.bytes);
  return h;
}

uint64_t total(const std::vector<FlowBuffer>& flows) {
  uint64_t sum = 0;
  for (const FlowBuffer& f : flows) sum += f.bytes;
  return sum;
}

enum Word { kSendBytes = 0, kSendShape = 1, kRecvBytes = 2, kRecvShape = 3 };

}  // namespace

Result sort_into_flows(int rank, int ranks, const std::vector<PeerCall>& calls, RankFlows* out) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    return fail(Result::InvalidArgument, "grouped exchange: rank %d of %d", rank, ranks);
  out->rank = rank;
  out->ranks = ranks;
  out->sends.assign(size_t(ranks), {});
  out->recvs.assign(size_t(ranks), {});
  for (const PeerCall& c : calls) {
    if (c.peer < 0 || c.peer >= ranks)
      return fail(Result::InvalidArgument, "grouped exchange: rank %d's %s names peer %d of %d ranks", rank,
                  c.kind == PeerCall::Send ? "ncclSend" : "ncclRecv", c.peer, ranks);
    auto& side = c.kind == PeerCall::Send ? out->sends : out->recvs;
    side[size_t(c.peer)].push_back({c.buffer, c.bytes});
  }
  return Result::Success;
}

std::vector<uint64_t> summarize(const RankFlows& flows) {
  std::vector<uint64_t> words(size_t(flows.ranks) * kSummaryWords, 0);
  for (int p = 0; p < flows.ranks; ++p) {
    uint64_t* w = &words[size_t(p) * kSummaryWords];
    w[kSendBytes] = total(flows.sends[size_t(p)]);
    w[kSendShape] = fingerprint(flows.sends[size_t(p)]);
    w[kRecvBytes] = total(flows.recvs[size_t(p)]);
    w[kRecvShape] = fingerprint(flows.recvs[size_t(p)]);
  }
  return words;
}

Result agree_on_exchange(int ranks, const std::vector<uint64_t>& summaries, ExchangeLayout* out) {
  const size_t n = size_t(ranks);
  if (ranks <= 0 || summaries.size() != n * n * kSummaryWords)
    return fail(Result::InvalidArgument, "grouped exchange: %zu summary words for %d ranks", summaries.size(), ranks);
  auto word = [&](int rank, int peer, Word w) { return summaries[(size_t(rank) * n + size_t(peer)) * kSummaryWords + w]; };
  out->ranks = ranks;
  out->element_bytes = 1;
  out->counts.assign(n * n, 0);
  for (int s = 0; s < ranks; ++s)
    for (int d = 0; d < ranks; ++d) {
      const uint64_t sent = word(s, d, kSendBytes), received = word(d, s, kRecvBytes);
      if (sent != received)
        return fail(Result::InvalidArgument,
                    "grouped send/recv: rank %d sends rank %d %llu bytes in this group, but rank %d receives %llu bytes "
                    "from rank %d (each ncclSend must match its peer's ncclRecv in size)",
                    s, d, static_cast<unsigned long long>(sent), d, static_cast<unsigned long long>(received), s);
      if (word(s, d, kSendShape) != word(d, s, kRecvShape))
        return fail(Result::InvalidArgument,
                    "grouped send/recv: rank %d's sends to rank %d (%llu bytes) do not match rank %d's receives from "
                    "rank %d call by call (the k-th ncclSend to a peer must have the size of the peer's k-th ncclRecv)",
                    s, d, static_cast<unsigned long long>(sent), d, s);
      out->counts[size_t(s) * n + size_t(d)] = size_t(sent);
    }
  return Result::Success;
}

ExchangeLayout alltoall_layout(int ranks, size_t count, size_t element_bytes) {
  return {ranks, element_bytes, std::vector<size_t>(size_t(ranks) * size_t(ranks), count)};
}

namespace {

// `count` elements of `element_bytes` on the pairs `pair(r)` for every rank r, nothing elsewhere.
template <typename Pair>
ExchangeLayout one_block_per_rank(int ranks, size_t count, size_t element_bytes, Pair pair) {
  ExchangeLayout l{ranks, element_bytes, std::vector<size_t>(size_t(ranks) * size_t(ranks), 0)};
  for (int r = 0; r < ranks; ++r) {
    const auto [s, d] = pair(r);
    l.counts[size_t(s) * size_t(ranks) + size_t(d)] = count;
  }
  return l;
}

}  // namespace

ExchangeLayout gather_layout(int ranks, int root, size_t count, size_t element_bytes) {
  return one_block_per_rank(ranks, count, element_bytes, [root](int r) { return std::pair{r, root}; });
}

ExchangeLayout scatter_layout(int ranks, int root, size_t count, size_t element_bytes) {
  return one_block_per_rank(ranks, count, element_bytes, [root](int r) { return std::pair{root, r}; });
}

bool packed_buffers_usable(const ExchangeLayout& layout, int rank, const void* send, const void* recv) {
  if ((layout.send_bytes(rank) > 0 && send == nullptr) || (layout.recv_bytes(rank) > 0 && recv == nullptr)) return false;
  // The blocks the rank receives and sends, each list in address order (packed), empty ones left
  // out; then one sweep over both finds every pair that overlaps.
  struct Block {
    uintptr_t at;
    size_t bytes;
    int peer;
  };
  std::vector<Block> in, out;
  uintptr_t r = reinterpret_cast<uintptr_t>(recv), s = reinterpret_cast<uintptr_t>(send);
  for (int q = 0; q < layout.ranks; ++q) {
    if (const size_t b = layout.block_bytes(q, rank); b > 0) in.push_back({r, b, q}), r += b;
    if (const size_t b = layout.block_bytes(rank, q); b > 0) out.push_back({s, b, q}), s += b;
  }
  for (size_t i = 0, j = 0; i < in.size() && j < out.size();) {
    const Block &a = in[i], &b = out[j];
    const bool own_block_in_place = a.peer == rank && b.peer == rank && a.at == b.at;
    if (a.at < b.at + b.bytes && b.at < a.at + a.bytes && !own_block_in_place) return false;
    if (a.at + a.bytes <= b.at + b.bytes) ++i;
    else ++j;
  }
  return true;
}

size_t largest_flow_bytes(const ExchangeLayout& layout) {
  size_t largest = 0;
  for (int s = 0; s < layout.ranks; ++s)
    for (int d = 0; d < layout.ranks; ++d)
      if (s != d) largest = std::max(largest, layout.block_bytes(s, d));
  return largest;
}

size_t relayed_ranges(const ExchangePlan& plan) {
  return size_t(std::count_if(plan.transfers.begin(), plan.transfers.end(), [](const Transfer& t) { return t.via >= 0; }));
}

Result topology_for_ranks(const topo::Topology& t, int ranks, topo::Topology* out) {
  const std::vector<int> gpus = t.gpus();
  if (ranks < 1 || int(gpus.size()) < ranks)
    return fail(Result::InvalidArgument, "topology %s has %zu GPUs, not enough for %d ranks", t.name.c_str(), gpus.size(), ranks);
  topo::Topology kept = t;
  kept.nodes.clear();
  kept.links.clear();
  std::vector<int> renamed(t.nodes.size(), -1);
  for (const topo::Node& node : t.nodes) {
    if (node.kind == topo::NodeKind::Gpu && std::find(gpus.begin(), gpus.begin() + ranks, node.id) == gpus.begin() + ranks)
      continue;
    renamed[size_t(node.id)] = int(kept.nodes.size());
    kept.nodes.push_back(node);
    kept.nodes.back().id = int(kept.nodes.size()) - 1;
  }
  for (topo::Node& node : kept.nodes)
    if (node.numa >= 0) node.numa = renamed[size_t(node.numa)];
  for (const topo::Link& link : t.links) {
    if (renamed[size_t(link.a)] < 0 || renamed[size_t(link.b)] < 0) continue;
    kept.links.push_back(link);
    kept.links.back().a = renamed[size_t(link.a)];
    kept.links.back().b = renamed[size_t(link.b)];
  }
  BRAID_TRY(kept.check());
  *out = std::move(kept);
  return Result::Success;
}

}  // namespace braid::route
