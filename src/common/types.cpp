#include "common/types.h"

#include <array>
#include <string>

namespace braid {

namespace {
constexpr std::array<DataType, kNumDataTypes> kTypes = {
    DataType::Int8,    DataType::Uint8,   DataType::Int32,      DataType::Uint32,
    DataType::Int64,   DataType::Uint64,  DataType::Float16,    DataType::Float32,
    DataType::Float64, DataType::Bfloat16, DataType::Float8e4m3, DataType::Float8e5m2};
constexpr std::array<std::string_view, kNumDataTypes> kTypeNames = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
constexpr std::array<size_t, kNumDataTypes> kTypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

constexpr std::array<RedOp, kNumRedOps> kOps = {RedOp::Sum, RedOp::Prod, RedOp::Max,
                                                RedOp::Min, RedOp::Avg,  RedOp::PreMulSum};
constexpr std::array<std::string_view, kNumRedOps> kOpNames = {"sum", "prod", "max",
                                                               "min", "avg",  "premulsum"};

constexpr std::array<Collective, kNumCollectives> kColls = {
    Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
    Collective::Broadcast, Collective::Reduce,    Collective::AllToAll};
constexpr std::array<std::string_view, kNumCollectives> kCollNames = {
    "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"};

std::string normalise(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}
}  // namespace

size_t datatype_size(DataType t) { return kTypeSizes.at(static_cast<size_t>(t)); }

bool datatype_is_float(DataType t) {
  switch (t) {
    case DataType::Float16: case DataType::Float32: case DataType::Float64:
    case DataType::Bfloat16: case DataType::Float8e4m3: case DataType::Float8e5m2:
      return true;
    default:
      return false;
  }
}

bool datatype_valid(int raw) { return raw >= 0 && raw < kNumDataTypes; }
bool redop_valid(int raw) { return raw >= 0 && raw < kNumRedOps; }

std::string_view datatype_name(DataType t) { return kTypeNames.at(static_cast<size_t>(t)); }
std::string_view redop_name(RedOp op) { return kOpNames.at(static_cast<size_t>(op)); }
std::string_view collective_name(Collective c) { return kCollNames.at(static_cast<size_t>(c)); }

std::optional<DataType> parse_datatype(std::string_view name) {
  const std::string n = normalise(name);
  for (size_t i = 0; i < kTypes.size(); ++i)
    if (normalise(kTypeNames[i]) == n) return kTypes[i];
  // nccl-tests' and NCCL's other spellings.
  if (n == "char") return DataType::Int8;
  if (n == "int") return DataType::Int32;
  if (n == "float16" || n == "fp16") return DataType::Float16;
  if (n == "float32" || n == "fp32") return DataType::Float32;
  if (n == "float64" || n == "fp64") return DataType::Float64;
  if (n == "bf16") return DataType::Bfloat16;
  if (n == "float8e4m3" || n == "fp8e4m3" || n == "e4m3") return DataType::Float8e4m3;
  if (n == "float8e5m2" || n == "fp8e5m2" || n == "e5m2") return DataType::Float8e5m2;
  return std::nullopt;
}

std::optional<RedOp> parse_redop(std::string_view name) {
  const std::string n = normalise(name);
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOpNames[i] == n) return kOps[i];
  return std::nullopt;
}

std::optional<Collective> parse_collective(std::string_view name) {
  const std::string n = normalise(name);
  for (size_t i = 0; i < kColls.size(); ++i)
    if (kCollNames[i] == n) return kColls[i];
  return std::nullopt;
}

std::span<const DataType> all_datatypes() { return kTypes; }
std::span<const RedOp> all_redops() { return kOps; }
std::span<const Collective> all_collectives() { return kColls; }

bool collective_reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

double busbw_factor(Collective c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return (n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce: return 1.0;
  }
  return 1.0;
}

}  // namespace braid
