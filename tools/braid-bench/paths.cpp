#include "paths.h"

#include "check.h"
#include "pattern.h"

namespace braid::bench {

namespace {

ncclDataType_t nccl_type(DataType t) { return static_cast<ncclDataType_t>(t); }

}  // namespace

BraidPath::BraidPath(RankThreads& threads)
    : threads_(threads), comms_(threads.size()), streams_(threads.size()) {
  braidUniqueId id;
  BENCH_BRAID(braidGetUniqueId(&id), nullptr);
  const int nranks = threads.size();
  threads.run_all([&](int rank) {
    BENCH_CUDA(cudaStreamCreateWithFlags(&streams_[rank], cudaStreamNonBlocking));
    BENCH_BRAID(braidCommInitRank(&comms_[rank], nranks, id, rank), nullptr);
  });
}

BraidPath::~BraidPath() {
  for (auto& [type, ops] : premulsum_)
    for (int r = 0; r < threads_.size(); ++r) braidRedOpDestroy(ops[r], comms_[r]);
  threads_.run_all([&](int rank) {
    BENCH_BRAID(braidCommDestroy(comms_[rank]), nullptr);
    cudaStreamDestroy(streams_[rank]);
  });
}

void BraidPath::prepare(DataType type) {
  if (premulsum_.count(static_cast<int>(type))) return;
  unsigned char scalar[8] = {};
  encode_value(type, kPreMulSumScalar, scalar);
  std::vector<ncclRedOp_t> ops(comms_.size());
  for (size_t r = 0; r < comms_.size(); ++r)
    BENCH_BRAID(braidRedOpCreatePreMulSum(&ops[r], scalar, nccl_type(type), ncclScalarHostImmediate, comms_[r]),
                comms_[r]);
  premulsum_[static_cast<int>(type)] = ops;
}

ncclRedOp_t BraidPath::op_for(int rank, const CaseSpec& spec) const {
  if (spec.op == RedOp::PreMulSum) return premulsum_.at(static_cast<int>(spec.type))[rank];
  return static_cast<ncclRedOp_t>(spec.op);
}

void BraidPath::issue(int rank, const CaseSpec& spec, const void* send, void* recv) {
  braidComm_t comm = comms_[rank];
  cudaStream_t s = streams_[rank];
  const size_t n = spec.shape.param_count;
  const ncclDataType_t t = nccl_type(spec.type);
  switch (spec.collective) {
    case Collective::AllReduce: BENCH_BRAID(braidAllReduce(send, recv, n, t, op_for(rank, spec), comm, s), comm); break;
    case Collective::AllGather: BENCH_BRAID(braidAllGather(send, recv, n, t, comm, s), comm); break;
    case Collective::ReduceScatter:
      BENCH_BRAID(braidReduceScatter(send, recv, n, t, op_for(rank, spec), comm, s), comm);
      break;
    case Collective::Broadcast: BENCH_BRAID(braidBroadcast(send, recv, n, t, spec.root, comm, s), comm); break;
    case Collective::Reduce:
      BENCH_BRAID(braidReduce(send, recv, n, t, op_for(rank, spec), spec.root, comm, s), comm);
      break;
    case Collective::AllToAll: BENCH_BRAID(braidAllToAll(send, recv, n, t, comm, s), comm); break;
  }
}

NcclPath::NcclPath(const std::vector<int>& devices)
    : devices_(devices), comms_(devices.size()), streams_(devices.size()) {
  BENCH_NCCL(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
  for (size_t r = 0; r < devices.size(); ++r) {
    BENCH_CUDA(cudaSetDevice(devices[r]));
    BENCH_CUDA(cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking));
  }
}

NcclPath::~NcclPath() {
  for (auto& [type, ops] : premulsum_)
    for (size_t r = 0; r < comms_.size(); ++r) ncclRedOpDestroy(ops[r], comms_[r]);
  for (size_t r = 0; r < comms_.size(); ++r) {
    cudaSetDevice(devices_[r]);
    cudaStreamSynchronize(streams_[r]);
    cudaStreamDestroy(streams_[r]);
    ncclCommDestroy(comms_[r]);
  }
}

void NcclPath::prepare(DataType type) {
  if (premulsum_.count(static_cast<int>(type))) return;
  unsigned char scalar[8] = {};
  encode_value(type, kPreMulSumScalar, scalar);
  std::vector<ncclRedOp_t> ops(comms_.size());
  for (size_t r = 0; r < comms_.size(); ++r)
    BENCH_NCCL(ncclRedOpCreatePreMulSum(&ops[r], scalar, nccl_type(type), ncclScalarHostImmediate, comms_[r]));
  premulsum_[static_cast<int>(type)] = ops;
}

void NcclPath::issue_all(const CaseSpec& spec, const std::vector<const void*>& send,
                         const std::vector<void*>& recv) {
  const size_t n = spec.shape.param_count;
  const ncclDataType_t t = nccl_type(spec.type);
  BENCH_NCCL(ncclGroupStart());
  for (size_t r = 0; r < comms_.size(); ++r) {
    const ncclRedOp_t op = spec.op == RedOp::PreMulSum ? premulsum_.at(static_cast<int>(spec.type))[r]
                                                       : static_cast<ncclRedOp_t>(spec.op);
    ncclComm_t comm = comms_[r];
    cudaStream_t s = streams_[r];
    switch (spec.collective) {
      case Collective::AllReduce: BENCH_NCCL(ncclAllReduce(send[r], recv[r], n, t, op, comm, s)); break;
      case Collective::AllGather: BENCH_NCCL(ncclAllGather(send[r], recv[r], n, t, comm, s)); break;
      case Collective::ReduceScatter: BENCH_NCCL(ncclReduceScatter(send[r], recv[r], n, t, op, comm, s)); break;
      case Collective::Broadcast: BENCH_NCCL(ncclBroadcast(send[r], recv[r], n, t, spec.root, comm, s)); break;
      case Collective::Reduce: BENCH_NCCL(ncclReduce(send[r], recv[r], n, t, op, spec.root, comm, s)); break;
      case Collective::AllToAll: BENCH_NCCL(ncclAlltoAll(send[r], recv[r], n, t, comm, s)); break;
    }
  }
  BENCH_NCCL(ncclGroupEnd());
}

void NcclPath::synchronize() {
  for (size_t r = 0; r < comms_.size(); ++r) {
    BENCH_CUDA(cudaSetDevice(devices_[r]));
    BENCH_CUDA(cudaStreamSynchronize(streams_[r]));
  }
}

}  // namespace braid::bench
