// The exchange board: how the ranks of one communicator agree on a group of ncclSend/ncclRecv
// without a collective call and without NCCL (docs/ROUTING.md, "Grouped send/recv").
//
// A send/recv group involves only the ranks that made calls, so no rank may wait unboundedly for
// the others, and nothing may go through the user's NCCL communicator (a peer's own ncclRecv would
// match it). The board is a POSIX shared segment (engine/shm.h) among the communicator's ranks on
// this host, named from an id every rank derives alone (the drop-in hashes the NCCL unique id), so
// each rank creates or opens it when its communicator is made and waits for nobody.
//
// It is a ring of kSlots slots. A rank's k-th arrival (its k-th grouped exchange on the
// communicator) goes to slot k % kSlots: it writes its words (words_per_rank, e.g. a summary of
// its calls) into its record of the slot, then counts itself in the slot's one state word by CAS.
// The rank that completes the count sets COMPLETE; a rank whose bounded wait expires first CASes
// OPEN -> ABANDONED. Whichever CAS wins is what every rank of the slot reads, and a rank arriving
// after ABANDONED reads ABANDONED: all ranks of the slot get the same verdict, and on COMPLETE the
// same words. A rank that will not come to its next slot (its send/recv went elsewhere) abandons
// that slot itself (abandon()). After an abandoned slot the board is off for good on that rank.
//
// Reuse: a slot is written again k + kSlots arrivals later. A rank gets there only through
// COMPLETE slots k + 1 .. k + kSlots - 1, each of which every rank entered, so every rank has read
// slot k's words by then (kSlots >= 2); once a slot is abandoned nobody goes past it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "engine/communicator.h"
#include "engine/shm.h"

namespace braid::engine {

class ExchangeBoard {
 public:
  static constexpr int kSlots = 4;
  static constexpr int kMaxRanks = 64;

  enum class Verdict { Complete, Abandoned };

  // Creates the board of communicator `id` or opens it when another rank made it first; never
  // waits for a rank. Every rank passes the same nranks and words_per_rank.
  static Result open(const CommId& id, int rank, int nranks, size_t words_per_rank, std::unique_ptr<ExchangeBoard>* out);
  ~ExchangeBoard();
  ExchangeBoard(const ExchangeBoard&) = delete;
  ExchangeBoard& operator=(const ExchangeBoard&) = delete;

  // This rank's next slot: publishes `mine` (words_per_rank words) and waits at most `wait_s` for
  // every rank. Complete: `all` holds every rank's words, rank-major. Abandoned: the board is off.
  // Not to be called once off() (the verdict is then Abandoned at once).
  Verdict arrive(std::span<const uint64_t> mine, double wait_s, std::vector<uint64_t>* all);
  // This rank will not come to its next slot: marks it abandoned (peers waiting there, or arriving
  // later, read ABANDONED) and turns the board off. Nothing when already off.
  void abandon();
  // Turns the board off without touching a slot: after a COMPLETE slot whose words every rank
  // refuses alike (each rank turns off at the same slot on its own).
  void turn_off() { off_ = true; }
  bool off() const { return off_; }
  // Slots this rank arrived at or abandoned.
  uint64_t arrivals() const { return attempt_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::string& name() const { return segment_.name(); }

 private:
  ExchangeBoard() = default;
  std::atomic<uint64_t>* state(uint64_t attempt) const;
  std::atomic<uint64_t>* record(uint64_t attempt, int rank) const;

  SharedSegment segment_;
  int rank_ = 0, nranks_ = 1;
  size_t words_per_rank_ = 0, slot_bytes_ = 0;
  uint64_t attempt_ = 0;
  bool off_ = false;
};

// A 128-bit board id from any bytes every rank of a communicator holds alike (the drop-in: the
// NCCL unique id, with a tag for the way the communicator was made).
CommId board_id(std::span<const unsigned char> bytes);

}  // namespace braid::engine
