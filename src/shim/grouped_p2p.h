// Groups of ncclSend/ncclRecv through braid's routed exchange (BRAID_ROUTE_EXCHANGES,
// docs/ROUTING.md "Grouped send/recv"). How PyTorch's all_to_all_single with uneven splits and
// nccl-tests' alltoallv, sendrecv and hypercube issue their exchanges.
//
// Inside an outermost group that holds nothing but send/recv on one communicator with an exchange
// board, the calls are held back (NCCL does not see them). At the group's end every rank meets on
// the board (engine/exchange_board.h) with a summary of its calls; the slot's verdict is every
// rank's, so all route the group (peer::RoutedPath::grouped) or all give it to NCCL unchanged, in
// a group of its own. Every other send/recv on such a communicator (a lone call, a group with
// anything else in it) abandons the rank's next slot before it reaches NCCL, which keeps NCCL's
// matching whatever the others do (the argument is in docs/ROUTING.md).
#pragma once

#include <nccl.h>

#include <functional>
#include <span>
#include <vector>

#include "route/grouped_exchange.h"
#include "shim/comm_table.h"
#include "shim/group_split.h"

namespace braid::shim {

using HeldPeerCall = Held<route::PeerCall>;

// The calling thread's held send/recv (of its open outermost group).
std::vector<HeldPeerCall>& this_thread_held_p2p();

// When NCCL made a communicator: names its board from `identity` (bytes every rank of it holds
// alike; empty: no board).
void name_board(const CommState& state, std::span<const unsigned char> identity);
// Once the communicator's rank, size and GPU are known (blocking ones only), with
// BRAID_ROUTE_EXCHANGES: opens its board, or records why it has none (said at its first send/recv
// group). Waits for no rank.
void open_board(ncclComm_t comm, const CommState& state);
// What a child of ncclCommSplit(parent, color) names its board from (empty: the parent has no id).
// Counts the split on the parent: every rank of it calls ncclCommSplit in the same order.
std::vector<unsigned char> split_identity(ncclComm_t parent, int color);

// Holds a send/recv made inside a group, when the group may still be routed: true when held.
bool hold_p2p(ncclComm_t comm, const route::PeerCall& call, cudaStream_t stream,
              const std::function<ncclResult_t()>& to_nccl);
// A send/recv on `comm` goes to NCCL without the board: abandons this rank's next slot.
void bypass_board(ncclComm_t comm);
// Hands the held calls to NCCL inside the still open group, in order (their board's slot is
// abandoned); the first error.
ncclResult_t hand_held_p2p_to_nccl(std::vector<HeldPeerCall>& held);
// After the outermost ncclGroupEnd (NCCL's group, empty of them, ended well): the held calls
// routed, or given to NCCL in a group of their own, as every rank's verdict on the board says.
// *braid_error: the result is braid's (a routed exchange's), not NCCL's.
ncclResult_t run_held_p2p(std::vector<HeldPeerCall> held, bool* braid_error);
// NCCL's ncclGroupEnd failed: the held calls are dropped as NCCL dropped the group.
void drop_held_p2p(std::vector<HeldPeerCall>& held);

}  // namespace braid::shim
