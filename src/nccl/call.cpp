#include "nccl/call.h"

namespace braid::nccl {

const char* operation_name(Operation operation) {
  switch (operation) {
    case Operation::AllReduce: return "AllReduce";
    case Operation::Reduce: return "Reduce";
    case Operation::Broadcast: return "Broadcast";
    case Operation::AllGather: return "AllGather";
    case Operation::ReduceScatter: return "ReduceScatter";
    case Operation::AlltoAll: return "AlltoAll";
    case Operation::Gather: return "Gather";
    case Operation::Scatter: return "Scatter";
    case Operation::Send: return "Send";
    case Operation::Recv: return "Recv";
  }
  return "Invalid";
}

Operation operation_of(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return Operation::AllReduce;
    case Collective::AllGather: return Operation::AllGather;
    case Collective::ReduceScatter: return Operation::ReduceScatter;
    case Collective::Broadcast: return Operation::Broadcast;
    case Collective::Reduce: return Operation::Reduce;
    case Collective::AllToAll: return Operation::AlltoAll;
  }
  return Operation::AlltoAll;
}

Collective Call::collective() const {
  switch (operation) {
    case Operation::AllReduce: return Collective::AllReduce;
    case Operation::Reduce: return Collective::Reduce;
    case Operation::Broadcast: return Collective::Broadcast;
    case Operation::AllGather: return Collective::AllGather;
    case Operation::ReduceScatter: return Collective::ReduceScatter;
    case Operation::AlltoAll:
    case Operation::Gather:
    case Operation::Scatter:
    case Operation::Send:
    case Operation::Recv:
      return Collective::AllToAll;
  }
  return Collective::AllToAll;
}

}  // namespace braid::nccl
