#include "paths.h"

#include <cstring>

#include "check.h"
#include "multipath/admission.h"
#include "multipath/split_call.h"
#include "nccl/linked.h"
#include "pattern.h"

namespace braid::bench {

namespace {

ncclDataType_t nccl_type(DataType t) { return static_cast<ncclDataType_t>(t); }

// One rank's call of `spec` on NCCL alone.
void issue_nccl(const CaseSpec& spec, const void* send, void* recv, ncclRedOp_t op, ncclComm_t comm,
                cudaStream_t s) {
  const size_t n = spec.shape.param_count;
  const ncclDataType_t t = nccl_type(spec.type);
  switch (spec.collective) {
    case Collective::AllReduce: BENCH_NCCL(ncclAllReduce(send, recv, n, t, op, comm, s)); break;
    case Collective::AllGather: BENCH_NCCL(ncclAllGather(send, recv, n, t, comm, s)); break;
    case Collective::ReduceScatter: BENCH_NCCL(ncclReduceScatter(send, recv, n, t, op, comm, s)); break;
    case Collective::Broadcast: BENCH_NCCL(ncclBroadcast(send, recv, n, t, spec.root, comm, s)); break;
    case Collective::Reduce: BENCH_NCCL(ncclReduce(send, recv, n, t, op, spec.root, comm, s)); break;
    case Collective::AllToAll: BENCH_NCCL(ncclAlltoAll(send, recv, n, t, comm, s)); break;
  }
}

}  // namespace

BraidPath::BraidPath(RankThreads& threads, const std::vector<int>& devices, bool multipath)
    : threads_(threads), comms_(threads.size()), streams_(threads.size()) {
  if (multipath) {
    nccl_comms_.resize(devices.size());
    orchestrators_.resize(devices.size());
    BENCH_NCCL(ncclCommInitAll(nccl_comms_.data(), static_cast<int>(devices.size()), devices.data()));
    threads.run_all([&](int rank) {
      BENCH_CUDA(cudaStreamCreateWithFlags(&streams_[rank], cudaStreamNonBlocking));
      BENCH_BRAID(static_cast<ncclResult_t>(
                      multipath::Orchestrator::create(nccl_comms_[rank], nccl::linked_calls(), &orchestrators_[rank])),
                  nullptr);
      orchestrators_[rank]->keep_history(rank == 0);
    });
    return;
  }
  braidUniqueId id;
  BENCH_BRAID(braidGetUniqueId(&id), nullptr);
  const int nranks = threads.size();
  threads.run_all([&](int rank) {
    BENCH_CUDA(cudaStreamCreateWithFlags(&streams_[rank], cudaStreamNonBlocking));
    BENCH_BRAID(braidCommInitRank(&comms_[rank], nranks, id, rank), nullptr);
  });
}

BraidPath::~BraidPath() {
  if (multipath()) {
    for (auto& [type, ops] : premulsum_)
      for (int r = 0; r < threads_.size(); ++r) ncclRedOpDestroy(ops[r], nccl_comms_[r]);
    threads_.run_all([&](int rank) {
      cudaStreamSynchronize(streams_[rank]);
      orchestrators_[rank].reset();
      cudaStreamDestroy(streams_[rank]);
    });
    for (ncclComm_t c : nccl_comms_) ncclCommDestroy(c);
    return;
  }
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
  for (size_t r = 0; r < comms_.size(); ++r) {
    if (multipath()) {
      // As the drop-in does: NCCL makes the operator, and NCCL alone carries its calls.
      BENCH_NCCL(ncclRedOpCreatePreMulSum(&ops[r], scalar, nccl_type(type), ncclScalarHostImmediate, nccl_comms_[r]));
      continue;
    }
    BENCH_BRAID(braidRedOpCreatePreMulSum(&ops[r], scalar, nccl_type(type), ncclScalarHostImmediate, comms_[r]),
                comms_[r]);
  }
  premulsum_[static_cast<int>(type)] = ops;
}

void BraidPath::use_static_share(double share) {
  for (auto& o : orchestrators_) {
    std::unique_ptr<balance::Balancer> b;
    if (balance::make_balancer("static", 2, share, &b) != Result::Success) die("static balancer: %s", last_error());
    o->use_balancer(std::move(b));
  }
}

std::vector<multipath::SplitRecord> BraidPath::take_splits() {
  if (!multipath()) return {};
  // Every rank's table takes in the same settled calls, so later splits still agree.
  for (auto& o : orchestrators_)
    if (o->drain() != Result::Success) die("multipath: %s", last_error());
  const auto& all = orchestrators_[0]->history();
  std::vector<multipath::SplitRecord> fresh(all.begin() + static_cast<long>(std::min(splits_taken_, all.size())), all.end());
  splits_taken_ = all.size();
  return fresh;
}

namespace {

// The bench's buffers are the communicator's GPU's own, and it captures nothing.
struct DeviceBuffersUncaptured final : multipath::AdmissionProbes {
  bool capturing() override { return false; }
  multipath::BufferFit buffers() override { return multipath::BufferFit::Usable; }
};

}  // namespace

// What the drop-in does with the call outside a group, its part made (multipath::admit, the
// drop-in's own decision): split, else NCCL alone.
void BraidPath::issue_multipath(int rank, const CaseSpec& spec, const void* send, void* recv) {
  const nccl::Call call{nccl::operation_of(spec.collective), send, recv, spec.shape.param_count, nccl_type(spec.type),
                        op_for(rank, spec), spec.root, nccl_comms_[rank]};
  multipath::Orchestrator& orchestrator = *orchestrators_[rank];
  multipath::AdmissionFacts facts;
  facts.collective = call.collective();
  facts.premulsum = spec.op == RedOp::PreMulSum && collective_reduces(spec.collective);
  facts.bytes = multipath::message_bytes(call, orchestrator.nranks());
  facts.comm_known = true;
  facts.nranks = orchestrator.nranks();
  facts.part_attempted = facts.part_made = true;
  facts.part_takes = orchestrator.takes(call);
  DeviceBuffersUncaptured probes;
  if (multipath::admit(facts, probes).route == multipath::Route::Split) {
    BENCH_BRAID(static_cast<ncclResult_t>(orchestrator.run(call, streams_[rank])), nullptr);
    return;
  }
  issue_nccl(spec, send, recv, call.op, nccl_comms_[rank], streams_[rank]);
}

ncclRedOp_t BraidPath::op_for(int rank, const CaseSpec& spec) const {
  if (spec.op == RedOp::PreMulSum) return premulsum_.at(static_cast<int>(spec.type))[rank];
  return static_cast<ncclRedOp_t>(spec.op);
}

void BraidPath::issue(int rank, const CaseSpec& spec, const void* send, void* recv) {
  if (multipath()) return issue_multipath(rank, spec, send, recv);
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

void NcclPath::issue(int rank, const CaseSpec& spec, const void* send, void* recv) {
  const ncclRedOp_t op = spec.op == RedOp::PreMulSum ? premulsum_.at(static_cast<int>(spec.type))[rank]
                                                     : static_cast<ncclRedOp_t>(spec.op);
  issue_nccl(spec, send, recv, op, comms_[rank], streams_[rank]);
}

void NcclPath::issue_all(const CaseSpec& spec, const std::vector<const void*>& send,
                         const std::vector<void*>& recv) {
  BENCH_NCCL(ncclGroupStart());
  for (size_t r = 0; r < comms_.size(); ++r) issue(static_cast<int>(r), spec, send[r], recv[r]);
  BENCH_NCCL(ncclGroupEnd());
}

void NcclPath::synchronize() {
  for (size_t r = 0; r < comms_.size(); ++r) {
    BENCH_CUDA(cudaSetDevice(devices_[r]));
    BENCH_CUDA(cudaStreamSynchronize(streams_[r]));
  }
}

}  // namespace braid::bench
