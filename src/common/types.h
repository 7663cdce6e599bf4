// Element types, reduction operators and collectives, with ncclDataType_t / ncclRedOp_t values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace braid {

enum class DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10,
  Float8e5m2 = 11,
};
inline constexpr int kNumDataTypes = 12;

// Sum..Avg equal ncclRedOp_t's built-in values. PreMulSum is braid's tag for NCCL's dynamic
// ops made by ncclRedOpCreatePreMulSum; its scalar travels beside the op.
enum class RedOp : int {
  Sum = 0,
  Prod = 1,
  Max = 2,
  Min = 3,
  Avg = 4,
  PreMulSum = 5,
};
inline constexpr int kNumRedOps = 6;

enum class Collective : int {
  AllReduce = 0,
  AllGather = 1,
  ReduceScatter = 2,
  Broadcast = 3,
  Reduce = 4,
  AllToAll = 5,
};
inline constexpr int kNumCollectives = 6;

size_t datatype_size(DataType t);
bool datatype_is_float(DataType t);
bool datatype_valid(int raw);
bool redop_valid(int raw);

// Lower-case names as nccl-tests prints them ("float", "bfloat16", "sum", "all_reduce"...).
std::string_view datatype_name(DataType t);
std::string_view redop_name(RedOp op);
std::string_view collective_name(Collective c);  // "allreduce", "allgather", ...
std::optional<DataType> parse_datatype(std::string_view name);
std::optional<RedOp> parse_redop(std::string_view name);
std::optional<Collective> parse_collective(std::string_view name);

std::span<const DataType> all_datatypes();
std::span<const RedOp> all_redops();
std::span<const Collective> all_collectives();

// Whether the collective reduces (AllReduce, ReduceScatter, Reduce).
bool collective_reduces(Collective c);

// nccl-tests' bus bandwidth factor (busbw = algbw x factor) of a collective over `nranks`.
double busbw_factor(Collective c, int nranks);

}  // namespace braid
