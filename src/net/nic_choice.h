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
