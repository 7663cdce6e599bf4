#include "engine/routed_exchange.h"

#include <algorithm>
#include <chrono>

#include "device/backoff.h"

namespace braid::engine {

namespace {

constexpr int kSendQueue = device::kQueueD2H;
constexpr int kForwardQueue = device::kQueueH2D;

using Flows = std::vector<route::FlowBuffer>;

size_t total_bytes(const Flows& flows) {
  size_t sum = 0;
  for (const route::FlowBuffer& f : flows) sum += f.bytes;
  return sum;
}

// Copies `bytes` from offset `from_at` of the block laid out as `from` to offset `to_at` of the
// block laid out as `to`: one copy per stretch in which neither side changes flow, `done` raised
// by the last (a queue runs in order, so the last finishing means all did).
Result copy_between(device::Backend* backend, int queue, const Flows& to, size_t to_at, const Flows& from,
                    size_t from_at, size_t bytes, device::Signal done) {
  size_t ti = 0, fi = 0;
  while (ti < to.size() && to_at >= to[ti].bytes) to_at -= to[ti++].bytes;
  while (fi < from.size() && from_at >= from[fi].bytes) from_at -= from[fi++].bytes;
  while (bytes > 0) {
    if (ti >= to.size() || fi >= from.size())
      return fail(Result::InternalError, "routed exchange: a range runs past its flows' buffers");
    const size_t n = std::min({bytes, to[ti].bytes - to_at, from[fi].bytes - from_at});
    BRAID_TRY(backend->copy(queue, static_cast<char*>(to[ti].data) + to_at,
                            static_cast<const char*>(from[fi].data) + from_at, n,
                            n == bytes ? done : device::Signal{}));
    bytes -= n;
    to_at += n;
    from_at += n;
    if (to_at == to[ti].bytes) ++ti, to_at = 0;
    if (from_at == from[fi].bytes) ++fi, from_at = 0;
  }
  return Result::Success;
}

// The pair's flows, checked against the plan's block size (the application's buffers must hold
// exactly what the plan moves).
Result flows_of(const std::vector<Flows>& side, const route::ExchangeLayout& l, int s, int d, const char* what,
                const Flows** out) {
  const size_t pair = size_t(s) * size_t(l.ranks) + size_t(d);
  if (pair >= side.size() || total_bytes(side[pair]) != l.block_bytes(s, d))
    return fail(Result::InvalidArgument, "routed exchange: the %s buffers of %d -> %d hold %zu bytes, the plan %zu", what,
                s, d, pair < side.size() ? total_bytes(side[pair]) : size_t(0), l.block_bytes(s, d));
  *out = &side[pair];
  return Result::Success;
}

}  // namespace

ExchangeBuffers packed_buffers(const route::ExchangeLayout& layout, const std::vector<const void*>& send,
                               const std::vector<void*>& recv, std::vector<void*> scratch) {
  const int n = layout.ranks;
  ExchangeBuffers b;
  b.send.resize(size_t(n) * size_t(n));
  b.recv.resize(size_t(n) * size_t(n));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const size_t bytes = layout.block_bytes(s, d), pair = size_t(s) * size_t(n) + size_t(d);
      // A rank that is not known here (null) has no flows here: only its peers use them.
      if (send[size_t(s)] != nullptr)
        b.send[pair] = {{const_cast<char*>(static_cast<const char*>(send[size_t(s)])) + layout.send_offset(s, d), bytes}};
      if (recv[size_t(d)] != nullptr) b.recv[pair] = {{static_cast<char*>(recv[size_t(d)]) + layout.recv_offset(s, d), bytes}};
    }
  b.scratch = std::move(scratch);
  return b;
}

ExchangeBuffers grouped_buffers(const std::vector<route::RankFlows>& every_rank, std::vector<void*> scratch) {
  const size_t n = every_rank.size();
  ExchangeBuffers b;
  b.send.resize(n * n);
  b.recv.resize(n * n);
  for (size_t s = 0; s < n; ++s)
    for (size_t d = 0; d < n; ++d) {
      if (d < every_rank[s].sends.size()) b.send[s * n + d] = every_rank[s].sends[d];
      if (s < every_rank[d].recvs.size()) b.recv[s * n + d] = every_rank[d].recvs[s];
    }
  b.scratch = std::move(scratch);
  return b;
}

Result run_exchange(const route::ExchangePlan& plan, int rank, const ExchangeBuffers& buffers,
                    const ExchangeSignals& signals, uint64_t epoch, device::Backend* backend, size_t slice_bytes,
                    double timeout_s, Completion completion) {
  const route::ExchangeLayout& l = plan.layout;
  const size_t n = size_t(l.ranks);
  if (rank < 0 || size_t(rank) >= n || buffers.send.size() != n * n || buffers.recv.size() != n * n ||
      buffers.scratch.size() != n || signals.ready.size() != n || signals.sent.size() != n ||
      signals.forwarded.size() != n)
    return fail(Result::InvalidArgument, "routed exchange: buffers for %zu/%zu pairs and %zu ranks, signals for %zu ranks, rank %d of %zu",
                buffers.send.size(), buffers.recv.size(), buffers.scratch.size(), signals.ready.size(), rank, n);
  if (epoch == 0 || epoch >= (uint64_t(1) << 32) || slice_bytes == 0)
    return fail(Result::InvalidArgument, "routed exchange: epoch %llu (1 to 2^32-1), slice %zu bytes",
                static_cast<unsigned long long>(epoch), slice_bytes);
  // Counters hold epoch << 32 + copies done, so a value of an earlier exchange is below every
  // wait of this one. A direct range is one copy; a relayed one is cut into slices so that the
  // relay forwards each slice as soon as it is in (the two hops overlap).
  const uint64_t base = epoch << 32;
  auto slices = [&](const route::Transfer& t) { return t.via < 0 ? size_t(1) : (t.bytes + slice_bytes - 1) / slice_bytes; };
  auto slice = [&](const route::Transfer& t, size_t k) { return t.via < 0 ? t.bytes : std::min(slice_bytes, t.bytes - k * slice_bytes); };
  auto scratch_of = [&](const route::Transfer& t) {
    return Flows{{static_cast<char*>(buffers.scratch[size_t(t.via)]) + t.scratch_offset, t.bytes}};
  };
  // Where each transfer's slices sit in its writers' queues: the first hop in the sender's send
  // queue, the second in the relay's forward queue (positions from 1, the same on every rank).
  std::vector<uint64_t> first_at(plan.transfers.size()), second_at(plan.transfers.size());
  {
    std::vector<uint64_t> sends(n, 0), forwards(n, 0);
    for (size_t i = 0; i < plan.transfers.size(); ++i) {
      const route::Transfer& t = plan.transfers[i];
      first_at[i] = sends[size_t(t.src)] + 1;
      sends[size_t(t.src)] += slices(t);
      if (t.via >= 0) {
        second_at[i] = forwards[size_t(t.via)] + 1;
        forwards[size_t(t.via)] += slices(t);
      }
    }
  }
  // Every buffer this rank uses holds what the plan moves, checked before anything is queued (a
  // rank that fails half-way would leave its peers waiting).
  for (const route::Transfer& t : plan.transfers) {
    const Flows* unused = nullptr;
    if (t.src == rank) BRAID_TRY(flows_of(buffers.send, l, t.src, t.dst, "send", &unused));
    if ((t.src == rank && t.via < 0) || t.via == rank) BRAID_TRY(flows_of(buffers.recv, l, t.src, t.dst, "receive", &unused));
  }
  // This rank's receive buffers and scratch are free: the previous exchange finished here (on
  // GPUs: the user's stream reached this exchange, and it joined the previous one's end).
  BRAID_TRY(backend->raise(kSendQueue, {signals.ready[size_t(rank)], epoch}));
  // First hops out of this rank's send buffers, each once its target has entered.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.src != rank) continue;
    const Flows *from = nullptr, *to = nullptr;
    BRAID_TRY(flows_of(buffers.send, l, t.src, t.dst, "send", &from));
    Flows scratch;
    if (t.via < 0) {
      BRAID_TRY(flows_of(buffers.recv, l, t.src, t.dst, "receive", &to));
    } else {
      scratch = scratch_of(t);
      to = &scratch;
    }
    BRAID_TRY(backend->wait(kSendQueue, {signals.ready[size_t(t.via < 0 ? t.dst : t.via)], epoch}));
    const size_t to_begin = t.via < 0 ? t.begin : 0;
    for (size_t k = 0; k < slices(t); ++k)
      BRAID_TRY(copy_between(backend, kSendQueue, *to, to_begin + k * slice_bytes, *from, t.begin + k * slice_bytes,
                             slice(t, k), {signals.sent[size_t(rank)], base + first_at[i] + k}));
  }
  // Second hops of the ranges this rank relays, slice by slice as the first hop brings them in.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.via != rank) continue;
    const Flows* to = nullptr;
    BRAID_TRY(flows_of(buffers.recv, l, t.src, t.dst, "receive", &to));
    const Flows from = scratch_of(t);
    BRAID_TRY(backend->wait(kForwardQueue, {signals.ready[size_t(t.dst)], epoch}));
    for (size_t k = 0; k < slices(t); ++k) {
      BRAID_TRY(backend->wait(kForwardQueue, {signals.sent[size_t(t.src)], base + first_at[i] + k}));
      BRAID_TRY(copy_between(backend, kForwardQueue, *to, t.begin + k * slice_bytes, from, k * slice_bytes,
                             slice(t, k), {signals.forwarded[size_t(rank)], base + second_at[i] + k}));
    }
  }
  // Done when everything this rank receives has landed (per writer queue, its last copy into this
  // rank) and its own queues finished (its send buffers and scratch are then free again).
  std::vector<device::Signal> until;
  auto last_into_me = [&](std::vector<std::atomic<uint64_t>*> const& counters, int writer, uint64_t position) {
    for (device::Signal& u : until)
      if (u.counter == counters[size_t(writer)]) return void(u.value = std::max(u.value, base + position));
    until.push_back({counters[size_t(writer)], base + position});
  };
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.dst != rank) continue;
    if (t.via < 0) last_into_me(signals.sent, t.src, first_at[i]);
    else last_into_me(signals.forwarded, t.via, second_at[i] + slices(t) - 1);
  }
  if (completion == Completion::QueuesWait) {
    // The forward queue ends after them; the caller's end_collective joins both queues.
    for (const device::Signal& u : until) BRAID_TRY(backend->wait(kForwardQueue, u));
    return Result::Success;
  }
  uint64_t mine_sent = 0, mine_forwarded = 0;
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.src == rank) mine_sent = first_at[i] + slices(t) - 1;
    if (t.via == rank) mine_forwarded = second_at[i] + slices(t) - 1;
  }
  if (mine_sent > 0) until.push_back({signals.sent[size_t(rank)], base + mine_sent});
  if (mine_forwarded > 0) until.push_back({signals.forwarded[size_t(rank)], base + mine_forwarded});
  const auto start = std::chrono::steady_clock::now();
  for (const device::Signal& u : until) {
    device::Backoff backoff;
    while (u.counter->load(std::memory_order_acquire) < u.value) {
      backoff.pause();
      if (!backoff.sleeping()) continue;
      std::string message;
      if (backend->status(&message) != Result::Success)
        return fail(Result::InternalError, "routed exchange: rank %d's device failed: %s", rank, message.c_str());
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
        return fail(Result::RemoteError, "routed exchange: rank %d waited %.0f s for its peers' copies (epoch %llu)", rank,
                    timeout_s, static_cast<unsigned long long>(epoch));
    }
  }
  return Result::Success;
}

}  // namespace braid::engine
