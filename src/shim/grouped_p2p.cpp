#include "shim/grouped_p2p.h"

#include <algorithm>
#include <mutex>

#include "common/log.h"
#include "common/settings.h"
#include "common/sizes.h"
#include "shim/group_split.h"
#include "shim/group_state.h"
#include "shim/braid_part.h"
#include "nccl/real.h"

namespace braid::shim {

namespace {

// A rank's words on the board: the ncclAlltoAll calls routing considered before this group (the
// routed path's host meetings must come in the same order on every rank), whether this rank can
// route the group at all, then its summary (route::summarize).
constexpr size_t kAlltoallsWord = 0, kRoutableWord = 1, kHeadWords = 2;

size_t board_words(int nranks) { return kHeadWords + size_t(nranks) * route::kSummaryWords; }

bool routing_groups() { return settings().route_exchanges > 0; }

// The communicator's braid state when it has a board that is still on.
std::shared_ptr<BraidPart> boarded(ncclComm_t comm) {
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part || !state->blocking || state->revoked) return nullptr;
  return state->braid_part;
}

// The held calls to NCCL in a group of their own (after the outermost group ended).
ncclResult_t give_to_nccl(std::vector<HeldPeerCall>& held) {
  const nccl::RealNccl& real = nccl::real_nccl();
  ncclResult_t first = real.ncclGroupStart();
  if (first != ncclSuccess) return first;
  first = each_to_nccl(held);
  const ncclResult_t ended = real.ncclGroupEnd();
  return first != ncclSuccess ? first : ended;
}

// Says once per communicator why its groups go to NCCL from now on.
void turned_off(BraidPart& path, int rank, const char* why) {
  BRAID_INFO(Coll, "routed exchange: rank %d: %s; this communicator's send/recv groups go to NCCL from now on (board %s)",
             rank, why, path.board ? path.board->name().c_str() : "-");
}

}  // namespace

std::vector<HeldPeerCall>& this_thread_held_p2p() {
  thread_local std::vector<HeldPeerCall> held;
  return held;
}

void name_board(const CommState& state, std::span<const unsigned char> identity) {
  if (identity.empty() || !state.braid_part) return;
  std::lock_guard lock(state.braid_part->mutex);
  state.braid_part->board_id = engine::board_id(identity);
}

void open_board(ncclComm_t comm, const CommState& state) {
  if (!routing_groups() || !state.braid_part) return;
  BraidPart& path = *state.braid_part;
  std::lock_guard lock(path.mutex);
  if (path.board) return;
  // Why there is none, said at the communicator's first send/recv group (hold_p2p).
  if (!state.blocking) {
    path.no_board_why = "it is non-blocking: ncclConfig_t.blocking = 0, as PyTorch makes it with "
                        "TORCH_NCCL_USE_COMM_NONBLOCKING=1";
    return;
  }
  if (!state.complete()) return;  // made inside a group: opened at the group's end (learn_made_in_group)
  if (state.nranks < 2) return;  // nothing to route, nothing to say
  if (state.nranks > engine::ExchangeBoard::kMaxRanks) {
    static_assert(engine::ExchangeBoard::kMaxRanks == 64, "the text below names the board's limit");
    path.no_board_why = "it has more than the 64 ranks an exchange board holds";
    return;
  }
  if (!path.board_id) {
    path.no_board_why = "nothing every rank holds alike names its board (ncclCommShrink, or a split of a "
                        "communicator without one)";
    return;
  }
  if (engine::ExchangeBoard::open(*path.board_id, state.rank, state.nranks, board_words(state.nranks), &path.board) !=
      Result::Success) {
    path.no_board_why = "its exchange board could not be opened (INIT said why)";
    BRAID_INFO(Init, "routed exchange: no exchange board on rank %d (%s); send/recv groups on communicator %p go to NCCL",
               state.rank, last_error(), static_cast<void*>(comm));
    return;
  }
  path.no_board_why = nullptr;
}

std::vector<unsigned char> split_identity(ncclComm_t parent, int color) {
  const auto state = comm_table().find(parent);
  if (!state || !state->braid_part) return {};
  BraidPart& path = *state->braid_part;
  std::lock_guard lock(path.mutex);
  const uint64_t split = path.splits++;
  if (!path.board_id) return {};
  std::vector<unsigned char> bytes(path.board_id->bytes, path.board_id->bytes + sizeof path.board_id->bytes);
  const auto* s = reinterpret_cast<const unsigned char*>(&split);
  bytes.insert(bytes.end(), s, s + sizeof split);
  const auto* c = reinterpret_cast<const unsigned char*>(&color);
  bytes.insert(bytes.end(), c, c + sizeof color);
  return bytes;
}

bool hold_p2p(ncclComm_t comm, const route::PeerCall& call, cudaStream_t stream,
              const std::function<ncclResult_t()>& to_nccl) {
  if (!routing_groups()) return false;
  GroupState& group = this_thread_group();
  std::vector<HeldPeerCall>& held = this_thread_held_p2p();
  // One communicator per group, and nothing else in it (a held collective, or a call that went to
  // NCCL already: deferring() is then false).
  if (!group.deferring() || !this_thread_held().empty() || (!held.empty() && held.front().comm != comm)) return false;
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part || state->revoked || state->nranks == 1) return false;
  BraidPart& path = *state->braid_part;
  {
    std::lock_guard lock(path.mutex);
    if (!state->blocking || !path.board) {
      say_declined(comm, path, state->rank, RouteDecline::NoBoard,
                   "its send/recv groups go to NCCL: it has no exchange board (%s)",
                   path.no_board_why ? path.no_board_why : "braid does not know its rank, size or GPU");
      return false;
    }
    if (path.board->off()) return false;  // said when it turned off
  }
  held.push_back({comm, call, stream, to_nccl});
  return true;
}

void bypass_board(ncclComm_t comm) {
  if (!routing_groups()) return;
  const std::shared_ptr<BraidPart> path = boarded(comm);
  if (!path) return;
  std::lock_guard lock(path->mutex);
  if (!path->board || path->board->off()) return;
  path->board->abandon();
  turned_off(*path, path->board->rank(), "a send/recv went to NCCL outside a group braid could route");
}

ncclResult_t hand_held_p2p_to_nccl(std::vector<HeldPeerCall>& held) {
  if (held.empty()) return ncclSuccess;
  bypass_board(held.front().comm);
  return each_to_nccl(held);
}

void drop_held_p2p(std::vector<HeldPeerCall>& held) {
  if (!held.empty()) bypass_board(held.front().comm);
  held.clear();
}

ncclResult_t run_held_p2p(std::vector<HeldPeerCall> held, bool* braid_error) {
  *braid_error = false;
  if (held.empty()) return ncclSuccess;
  const ncclComm_t comm = held.front().comm;
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part) return give_to_nccl(held);
  BraidPart& path = *state->braid_part;
  std::unique_lock lock(path.mutex);
  if (!path.board || path.board->off()) {
    lock.unlock();
    return give_to_nccl(held);
  }
  engine::ExchangeBoard& board = *path.board;
  const int rank = board.rank(), nranks = board.nranks();
  std::vector<route::PeerCall> calls;
  bool one_stream = true;
  for (const HeldPeerCall& h : held) {
    calls.push_back(h.call);
    one_stream = one_stream && h.stream == held.front().stream;
  }
  route::RankFlows flows;
  if (route::sort_into_flows(rank, nranks, calls, &flows) != Result::Success) {
    board.abandon();
    turned_off(path, rank, last_error());
    lock.unlock();
    return give_to_nccl(held);
  }
  // What only this rank knows goes on the board too, so that every rank decides alike.
  const cudaStream_t stream = held.front().stream;
  std::vector<uint64_t> mine = {path.alltoalls, one_stream && !captured(stream) ? 1u : 0u};
  const std::vector<uint64_t> summary = route::summarize(flows);
  mine.insert(mine.end(), summary.begin(), summary.end());
  std::vector<uint64_t> all;
  // The first group waits longer: ranks come to their first exchange far apart, and an abandoned
  // slot turns the board off for good.
  const double wait_ms = board.arrivals() == 0 ? std::max(settings().route_agree_ms, settings().route_agree_first_ms)
                                               : settings().route_agree_ms;
  if (board.arrive(mine, wait_ms / 1000.0, &all) != engine::ExchangeBoard::Verdict::Complete) {
    turned_off(path, rank, "not every rank reached this send/recv group within BRAID_ROUTE_AGREE_MS");
    lock.unlock();
    return give_to_nccl(held);
  }
  // Every rank reads the same words, so every rank takes each branch below alike.
  const size_t words = board_words(nranks);
  std::vector<uint64_t> summaries;
  bool same_alltoalls = true, routable = true;
  for (int q = 0; q < nranks; ++q) {
    const uint64_t* w = &all[size_t(q) * words];
    same_alltoalls = same_alltoalls && w[kAlltoallsWord] == all[kAlltoallsWord];
    routable = routable && w[kRoutableWord] == 1;
    summaries.insert(summaries.end(), w + kHeadWords, w + words);
  }
  route::ExchangeLayout layout;
  if (!same_alltoalls || route::agree_on_exchange(nranks, summaries, &layout) != Result::Success) {
    // A group that does not match call by call may still match across groups in NCCL, and then
    // only NCCL's order keeps it right: from here on every send/recv goes to NCCL.
    board.turn_off();
    turned_off(path, rank, same_alltoalls ? last_error() : "the ranks made different ncclAlltoAll calls before it");
    lock.unlock();
    return give_to_nccl(held);
  }
  // Every pair matched: from here on a group that goes to NCCL gets whole matched pairs, and the
  // board stays on.
  const size_t min_bytes = path.options.route_min_bytes;
  const size_t largest = route::largest_flow_bytes(layout);
  if (largest == 0 || largest < min_bytes) {
    say_declined(comm, path, rank, RouteDecline::SmallGroup,
                 "a send/recv group whose largest flow is %zu bytes went to NCCL: groups whose flows are all under "
                 "BRAID_ROUTE_MIN_BYTES=%zu are not routed", largest, min_bytes);
    lock.unlock();
    return give_to_nccl(held);
  }
  if (!routable) {
    say_declined(comm, path, rank, RouteDecline::Unroutable,
                 "a send/recv group went to NCCL: some rank made it on several streams, or captured it in a CUDA "
                 "graph");
    lock.unlock();
    return give_to_nccl(held);
  }
  if (!path.routed_attempted) {
    // Every rank is here (the slot is complete) after the same ncclAlltoAll calls, so this is a
    // collective point; braid's communicator is made from an id derived from the board's, with no
    // NCCL call on the user's communicator.
    path.routed_attempted = true;
    const uint8_t tag[4] = {'r', 'o', 'u', 't'};
    std::vector<unsigned char> seed(path.board_id->bytes, path.board_id->bytes + sizeof path.board_id->bytes);
    seed.insert(seed.end(), tag, tag + sizeof tag);
    const engine::CommId id = engine::board_id(seed);
    std::unique_ptr<peer::RoutedPath> made;
    if (peer::RoutedPath::create(comm, nccl::real_nccl(), &made, &id) != Result::Success) {
      BRAID_WARN(Shim, "routed exchange: not on GPU %d (%s); this communicator's exchanges go to NCCL",
                 state->cuda_device, last_error());
    } else {
      path.routed = std::move(made);
      path.routed_live.store(path.routed.get());
    }
  }
  if (!path.routed) {
    lock.unlock();
    return give_to_nccl(held);
  }
  bool routed = false;
  const Result r = path.routed->grouped(layout, flows, stream, &routed);
  if (r == Result::Success && !routed) {
    say_declined(comm, path, rank, RouteDecline::PathDeclined, "a send/recv group went to NCCL: %s",
                 path.routed->declined());
    lock.unlock();
    return give_to_nccl(held);
  }
  *braid_error = r != Result::Success;
  return static_cast<ncclResult_t>(r);
}

}  // namespace braid::shim
