#include "engine/exchange_board.h"

#include <chrono>
#include <cstring>

#include "common/log.h"
#include "device/backoff.h"

namespace braid::engine {

namespace {

// The segment: a header, then kSlots slots of one state word (a cache line of its own) and
// nranks records of words_per_rank words.
struct alignas(64) BoardHeader {
  std::atomic<uint64_t> nranks;
  std::atomic<uint64_t> words_per_rank;
  std::atomic<uint64_t> attached;
};

// A slot's state word: the attempt it belongs to (1-based: a zero word is a slot never used),
// how many ranks arrived, and the phase.
enum Phase : uint64_t { kOpen = 0, kComplete = 1, kAbandoned = 2 };
constexpr int kArrivalBits = 16, kPhaseBits = 2;
static_assert(ExchangeBoard::kMaxRanks < (1 << kArrivalBits));

constexpr uint64_t make_state(uint64_t attempt, uint64_t arrived, Phase phase) {
  return attempt << (kArrivalBits + kPhaseBits) | arrived << kPhaseBits | phase;
}
constexpr uint64_t attempt_of(uint64_t w) { return w >> (kArrivalBits + kPhaseBits); }
constexpr uint64_t arrived_of(uint64_t w) { return (w >> kPhaseBits) & ((uint64_t{1} << kArrivalBits) - 1); }
constexpr Phase phase_of(uint64_t w) { return static_cast<Phase>(w & ((uint64_t{1} << kPhaseBits) - 1)); }

size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace

CommId board_id(std::span<const unsigned char> bytes) {
  // Two independent 64-bit FNV-1a style hashes with a final mix each: 128 bits of id.
  auto hash = [&](uint64_t h) {
    for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  };
  const uint64_t words[2] = {hash(0xcbf29ce484222325ull), hash(0x84222325cbf29ce4ull)};
  CommId id;
  std::memcpy(id.bytes, words, sizeof id.bytes);
  return id;
}

Result ExchangeBoard::open(const CommId& id, int rank, int nranks, size_t words_per_rank,
                           std::unique_ptr<ExchangeBoard>* out) {
  out->reset();
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks || words_per_rank == 0)
    return fail(Result::InvalidArgument, "exchange board: rank %d of %d (at most %d), %zu words per rank", rank,
                nranks, kMaxRanks, words_per_rank);
  std::unique_ptr<ExchangeBoard> b(new ExchangeBoard());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->words_per_rank_ = words_per_rank;
  b->slot_bytes_ = 64 + round_up(size_t(nranks) * words_per_rank * sizeof(uint64_t));
  const size_t bytes = sizeof(BoardHeader) + size_t(kSlots) * b->slot_bytes_;
  const std::string name = "/braid-" + id.hex() + "-board";
  // Whoever comes first creates it; the others open it (sized by its creator at once). A board
  // unlinked in between (every rank had attached, or one destroyed its communicator) is made
  // afresh: that rank then waits alone at its first slot and abandons it.
  Result r = Result::SystemError;
  for (int tries = 0; tries < 3 && r != Result::Success; ++tries) {
    bool exists = false;
    r = SharedSegment::create(name, bytes, &b->segment_, &exists);
    if (exists) r = SharedSegment::open(name, bytes, 1.0, nullptr, &b->segment_);
  }
  BRAID_TRY(r);
  auto* header = static_cast<BoardHeader*>(b->segment_.data());
  for (auto [word, want] : {std::pair{&header->nranks, uint64_t(nranks)}, {&header->words_per_rank, words_per_rank}}) {
    uint64_t seen = 0;
    if (!word->compare_exchange_strong(seen, want) && seen != want)
      return fail(Result::InvalidUsage, "exchange board %s: made for %llu, this rank expects %llu", name.c_str(),
                  static_cast<unsigned long long>(seen), static_cast<unsigned long long>(want));
  }
  // Once every rank has it mapped the name can go: nothing is left in /dev/shm after a crash.
  if (header->attached.fetch_add(1) + 1 == uint64_t(nranks)) SharedSegment::unlink(name);
  *out = std::move(b);
  return Result::Success;
}

ExchangeBoard::~ExchangeBoard() {
  // A rank that never came leaves the name behind; the communicator's end removes it.
  if (!segment_.name().empty()) SharedSegment::unlink(segment_.name());
}

std::atomic<uint64_t>* ExchangeBoard::state(uint64_t attempt) const {
  auto* base = static_cast<char*>(segment_.data()) + sizeof(BoardHeader);
  return reinterpret_cast<std::atomic<uint64_t>*>(base + ((attempt - 1) % kSlots) * slot_bytes_);
}

std::atomic<uint64_t>* ExchangeBoard::record(uint64_t attempt, int rank) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<char*>(state(attempt)) + 64) +
         size_t(rank) * words_per_rank_;
}

ExchangeBoard::Verdict ExchangeBoard::arrive(std::span<const uint64_t> mine, double wait_s,
                                             std::vector<uint64_t>* all) {
  if (off_ || mine.size() != words_per_rank_) {
    abandon();
    return Verdict::Abandoned;
  }
  const uint64_t k = ++attempt_;
  std::atomic<uint64_t>* words = record(k, rank_);
  for (size_t i = 0; i < mine.size(); ++i) words[i].store(mine[i], std::memory_order_relaxed);
  // Count this rank in (release: its words before the count; every later CAS continues the
  // release sequence, so the rank that reads COMPLETE sees every rank's words).
  std::atomic<uint64_t>& s = *state(k);
  uint64_t w = s.load(std::memory_order_acquire), next = 0;
  for (;;) {
    uint64_t arrived = 1;
    if (attempt_of(w) == k) {
      if (phase_of(w) != kOpen) break;  // abandoned before this rank came (COMPLETE cannot be)
      arrived = arrived_of(w) + 1;
    } else if (attempt_of(w) > k) {
      break;  // a slot ahead of this rank: the ranks do not count alike; treated as abandoned
    }
    next = make_state(k, arrived, arrived == uint64_t(nranks_) ? kComplete : kOpen);
    if (s.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      w = next;
      break;
    }
  }
  // Wait for the last rank, or abandon the slot at the bound.
  const auto start = std::chrono::steady_clock::now();
  device::Backoff backoff(device::kMeetingYieldNs);
  while (attempt_of(w) == k && phase_of(w) == kOpen) {
    if (backoff.sleeping() && device::seconds_since(start) > wait_s) {
      if (s.compare_exchange_strong(w, make_state(k, arrived_of(w), kAbandoned), std::memory_order_acq_rel,
                                    std::memory_order_acquire))
        w = make_state(k, arrived_of(w), kAbandoned);
      continue;  // on failure w holds the newer word
    }
    backoff.pause();
    w = s.load(std::memory_order_acquire);
  }
  if (attempt_of(w) != k || phase_of(w) != kComplete) {
    off_ = true;
    return Verdict::Abandoned;
  }
  all->assign(size_t(nranks_) * words_per_rank_, 0);
  for (int q = 0; q < nranks_; ++q) {
    const std::atomic<uint64_t>* theirs = record(k, q);
    for (size_t i = 0; i < words_per_rank_; ++i)
      (*all)[size_t(q) * words_per_rank_ + i] = theirs[i].load(std::memory_order_relaxed);
  }
  return Verdict::Complete;
}

void ExchangeBoard::abandon() {
  if (off_) return;
  off_ = true;
  const uint64_t k = ++attempt_;
  std::atomic<uint64_t>& s = *state(k);
  uint64_t w = s.load(std::memory_order_acquire);
  // Only slot k's own OPEN word, or an older attempt's, becomes ABANDONED; an abandoned slot stays.
  while (attempt_of(w) < k || (attempt_of(w) == k && phase_of(w) == kOpen)) {
    const uint64_t arrived = attempt_of(w) == k ? arrived_of(w) : 0;
    if (s.compare_exchange_weak(w, make_state(k, arrived, kAbandoned), std::memory_order_acq_rel,
                                std::memory_order_acquire))
      break;
  }
}

}  // namespace braid::engine
