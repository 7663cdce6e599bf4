// The arithmetic of braid's NVLink path (src/peer) that needs no GPU: which part of an AllReduce
// share each rank reduces, how the pulled pieces fit the scratch, and which path signals the
// path raises. Kept apart from peer_path.cpp so it is tested on CPU (tests/peer).
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::peer {

// The path's signals in the engine's control segment (engine::RankRecord::path_signals).
enum PeerSignal : int {
  kPeerReady = 0,     // this rank's input is ready (and, for AllReduce, its output may be written)
  kPeerReadDone = 1,  // this rank has read its peers' buffers (and written their outputs)
  // The routed exchange's (routed_path.h; engine::ExchangeSignals).
  kRoutedReady = 2,
  kRoutedSent = 3,
  kRoutedForwarded = 4,
  // Calls captured in a CUDA graph (graph_barriers below).
  kPeerGraphPhase = 5,
};

// Outside graphs a call's two meeting points (kPeerReady, kPeerReadDone) carry one bit that
// alternates between calls: bit 1 for odd calls, bit 0 for even ones (a signal never raised reads
// 0, an aborted one has both). A wait passes on its call's bit, so the operations one call queues
// serve every other call with the same buffers, and braid replays them from a CUDA graph
// (peer_path.h). No stale bit passes a wait: a rank meets its peers at call k only after it saw
// each peer's kPeerReadDone of call k - 1, raised after that peer's kPeerReady of call k - 1 (stream
// memory operations are ordered), and no peer raises a signal of call k + 1 before this rank has
// raised its kPeerReadDone of call k.
inline constexpr uint64_t call_bit(uint64_t call) { return uint64_t{1} << (call & 1); }

// A call captured in a CUDA graph is replayed with the values it was captured with, so its
// signals cannot count calls as kPeerReady's do. Instead each rank's kPeerGraphPhase flag cycles
// through three one-hot states, one per barrier, and every captured call passes all three, so a
// replay ends where it began (a flag never raised reads 0, which passes no barrier). A rank
// raises a barrier's state and then waits until each peer's flag has a bit of `pass_mask`: that
// barrier's state or the next one, since a peer that has passed this barrier may already have
// raised the next but cannot pass that one without this rank. Waits are stream memory
// operations (CU_STREAM_WAIT_VALUE_AND), which a graph captures; releasing a flag to all ones
// passes every barrier.
struct GraphBarrier {
  uint64_t state = 0;
  uint64_t pass_mask = 0;
};
enum GraphBarrierStep : int {
  kGraphInputsReady = 0,  // every rank's input is ready (and its output may be written)
  kGraphReadsDone = 1,    // every rank has read its peers' buffers (and written their outputs)
  kGraphRearmed = 2,      // every rank has seen the others' reads done: the flags may cycle again
};
inline constexpr GraphBarrier kGraphBarriers[3] = {{1, 1 | 2}, {2, 2 | 4}, {4, 4 | 1}};

// AllReduce parts start on this many bytes, so the kernel's 16-byte accesses line up wherever the
// caller's buffer does.
inline constexpr size_t kPartAlignBytes = 256;

struct ElementRange {
  size_t begin = 0;
  size_t count = 0;
};

// The part of the share [0, elements) that `rank` of `nranks` reduces for everyone: equal,
// aligned parts, the last rank taking the remainder. The parts tile the share exactly once.
ElementRange reduce_part(int rank, int nranks, size_t elements, size_t element_size);

// Elements of one peer's input per pulled piece: two scratch slots, each a piece of every peer's,
// fit `scratch_bytes` (at least one aligned piece, whatever the budget).
size_t pull_piece_elements(int nranks, size_t element_size, int64_t scratch_bytes);
// The bytes of one scratch slot (a piece of every peer's input).
size_t pull_slot_bytes(int nranks, size_t element_size, int64_t scratch_bytes);

}  // namespace braid::peer
