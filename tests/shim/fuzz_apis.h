// The collectives and send/recv the argument fuzzes call (argument_fuzz_test.cpp on the CPU,
// argument_fuzz_gpu.cpp on GPUs), and which arguments each takes.
#pragma once

enum class Api { AllReduce, Reduce, Broadcast, Bcast, AllGather, ReduceScatter, AlltoAll, Gather, Scatter, Send, Recv };
inline constexpr Api kApis[] = {Api::AllReduce, Api::Reduce,  Api::Broadcast, Api::Bcast, Api::AllGather,
                                Api::ReduceScatter, Api::AlltoAll, Api::Gather, Api::Scatter, Api::Send,
                                Api::Recv};

// The entry point's name less "nccl" ("Bcast", not NCCL's "Broadcast" of its texts).
inline const char* api_name(Api api) {
  switch (api) {
    case Api::AllReduce: return "AllReduce";
    case Api::Reduce: return "Reduce";
    case Api::Broadcast: return "Broadcast";
    case Api::Bcast: return "Bcast";
    case Api::AllGather: return "AllGather";
    case Api::ReduceScatter: return "ReduceScatter";
    case Api::AlltoAll: return "AlltoAll";
    case Api::Gather: return "Gather";
    case Api::Scatter: return "Scatter";
    case Api::Send: return "Send";
    case Api::Recv: return "Recv";
  }
  return "?";
}

inline bool takes_op(Api api) { return api == Api::AllReduce || api == Api::Reduce || api == Api::ReduceScatter; }
// A root, or a send/recv's peer.
inline bool takes_root(Api api) {
  return api == Api::Reduce || api == Api::Broadcast || api == Api::Bcast || api == Api::Gather ||
         api == Api::Scatter || api == Api::Send || api == Api::Recv;
}
inline bool point_to_point(Api api) { return api == Api::Send || api == Api::Recv; }
