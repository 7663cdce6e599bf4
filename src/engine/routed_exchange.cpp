#include "engine/routed_exchange.h"

#include <algorithm>
#include <chrono>

#include "device/backoff.h"

namespace braid::engine {

namespace {

constexpr int kSendQueue = device::kQueueD2H;
constexpr int kForwardQueue = device::kQueueH2D;

char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
const char* at(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }

}  // namespace

Result run_exchange(const route::ExchangePlan& plan, int rank, const ExchangeBuffers& buffers,
                    const ExchangeSignals& signals, uint64_t epoch, device::Backend* backend, size_t slice_bytes,
                    double timeout_s) {
  const route::ExchangeLayout& l = plan.layout;
  const size_t n = size_t(l.ranks);
  if (rank < 0 || size_t(rank) >= n || buffers.send.size() != n || buffers.recv.size() != n || buffers.scratch.size() != n)
    return fail(Result::InvalidArgument, "routed exchange: buffers for %zu/%zu/%zu ranks, rank %d of %zu",
                buffers.send.size(), buffers.recv.size(), buffers.scratch.size(), rank, n);
  if (epoch == 0 || epoch >= (uint64_t(1) << 32) || slice_bytes == 0)
    return fail(Result::InvalidArgument, "routed exchange: epoch %llu (1 to 2^32-1), slice %zu bytes",
                static_cast<unsigned long long>(epoch), slice_bytes);
  // Per-range counters hold epoch << 32 + slices done, so a value of an earlier exchange is
  // below every wait of this one. A direct range is one slice; a relayed one is cut into slices
  // so that the relay forwards each slice as soon as it is in (the two hops overlap).
  const uint64_t base = epoch << 32;
  auto slices = [&](const route::Transfer& t) { return t.via < 0 ? size_t(1) : (t.bytes + slice_bytes - 1) / slice_bytes; };
  auto slice = [&](const route::Transfer& t, size_t k) { return t.via < 0 ? t.bytes : std::min(slice_bytes, t.bytes - k * slice_bytes); };
  // This rank's receive buffer and scratch are free: the previous exchange finished here.
  signals.ready[size_t(rank)].store(epoch, std::memory_order_release);
  // First hops out of this rank's send buffer, each once its target has entered.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.src != rank) continue;
    const char* from = at(buffers.send[size_t(t.src)], l.send_offset(t.src, t.dst) + t.begin);
    BRAID_TRY(backend->wait(kSendQueue, {&signals.ready[size_t(t.via < 0 ? t.dst : t.via)], epoch}));
    char* to = t.via < 0 ? at(buffers.recv[size_t(t.dst)], l.recv_offset(t.src, t.dst) + t.begin)
                         : at(buffers.scratch[size_t(t.via)], t.scratch_offset);
    std::atomic<uint64_t>* done = t.via < 0 ? &signals.landed[i] : &signals.relayed[i];
    for (size_t k = 0; k < slices(t); ++k)
      BRAID_TRY(backend->copy(kSendQueue, to + k * slice_bytes, from + k * slice_bytes, slice(t, k), {done, base + k + 1}));
  }
  // Second hops of the ranges this rank relays, slice by slice as the first hop brings them in.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.via != rank) continue;
    BRAID_TRY(backend->wait(kForwardQueue, {&signals.ready[size_t(t.dst)], epoch}));
    char* to = at(buffers.recv[size_t(t.dst)], l.recv_offset(t.src, t.dst) + t.begin);
    const char* from = at(buffers.scratch[size_t(rank)], t.scratch_offset);
    for (size_t k = 0; k < slices(t); ++k) {
      BRAID_TRY(backend->wait(kForwardQueue, {&signals.relayed[i], base + k + 1}));
      BRAID_TRY(backend->copy(kForwardQueue, to + k * slice_bytes, from + k * slice_bytes, slice(t, k),
                              {&signals.landed[i], base + k + 1}));
    }
  }
  // Done when everything this rank receives has landed and everything it sends or relays has
  // left (its send buffer and scratch are then free again).
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.dst != rank && t.src != rank && t.via != rank) continue;
    std::atomic<uint64_t>& done = t.via >= 0 && t.src == rank ? signals.relayed[i] : signals.landed[i];
    const uint64_t all = base + slices(t);
    device::Backoff backoff;
    while (done.load(std::memory_order_acquire) < all) {
      backoff.pause();
      if (!backoff.sleeping()) continue;
      std::string message;
      if (backend->status(&message) != Result::Success)
        return fail(Result::InternalError, "routed exchange: rank %d's device failed: %s", rank, message.c_str());
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
        return fail(Result::RemoteError, "routed exchange: rank %d waited %.0f s for transfer %zu (%d -> %d via %d)", rank,
                    timeout_s, i, t.src, t.dst, t.via);
    }
  }
  return Result::Success;
}

}  // namespace braid::engine
