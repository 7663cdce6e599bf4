// FuseLink's sender-side choice of NICs for one message, and how the message is cut over them.
// Pure functions of what the monitor and the receiver's credits say, so they test on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid::net {

enum class Schedule { FuseLink, Direct, Stripe };
Schedule parse_schedule(const char* text);  // "fuselink", "direct", "stripe"

struct ChoiceInput {
  int nic_count = 1;
  int direct = 0;               // the NIC NCCL gave this connection
  uint32_t local_idle = ~0u;    // bit i: local NIC i has no higher-priority work (monitor)
  uint32_t remote_idle = ~0u;   // bit i: the receiver's NIC paired with local NIC i is idle (credits)
  size_t bytes = 0;
  size_t stripe_min_bytes = 0;  // messages this large are striped over every usable NIC
  uint32_t rotate = 0;          // spreads small messages over idle indirect NICs
};

// A bit mask of the NICs the message goes on. FuseLink: the direct NIC if idle; else an idle
// indirect NIC; else the direct NIC. A message of stripe_min_bytes or more goes over every NIC
// that is idle on both sides (the direct one included when idle).
uint32_t choose_nics(Schedule schedule, const ChoiceInput& in);

// The second half of the hysteresis (the monitor's idle window is the first): per connection,
// a NIC that turns busy again soon after it was found idle (a flap) must stay quiet for a hold
// time before it is used again; the hold doubles with each flap, up to `max_hold_ns`, and halves
// after a long calm. Steady load then settles on one choice instead of following every gap.
class ChoiceDamper {
 public:
  ChoiceDamper(int64_t base_hold_ns = 2000000, int64_t max_hold_ns = 64000000);
  // `idle`: what the monitor and the credits say now; returns what the choice may use.
  uint32_t filter(uint32_t idle, int nic_count, int64_t now);
  int64_t hold_ns(int nic) const { return hold_[nic]; }

 private:
  static constexpr int kNics = 32;
  int64_t base_, max_;
  int64_t busy_seen_[kNics] = {};  // the last time the NIC was seen busy
  int64_t freed_at_[kNics] = {};   // when it was last seen idle after being busy (0: not since)
  int64_t hold_[kNics] = {};
};

struct Piece {
  int nic = 0;
  size_t offset = 0;
  size_t bytes = 0;
};

// Cuts `bytes` over the NICs of `mask`, in proportion to `weights` (a NIC's rate; empty: equal),
// each NIC's share cut again into at most `streams` pieces of at least `min_piece` bytes (except
// a smaller whole). Pieces cover [0, bytes) exactly, in order; a 0-byte message is one piece.
std::vector<Piece> cut_message(uint32_t mask, size_t bytes, const std::vector<double>& weights,
                               int streams, size_t min_piece);

}  // namespace braid::net
