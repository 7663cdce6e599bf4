// The public entry points: check arguments, pick the kernel, run SIMD or portable code.
#include "reduce/reduce.h"

#include <cstring>

#include "reduce/kernel.h"
#include "reduce/simd.h"

namespace braid::reduce {

namespace {

Result check_type(DataType type) {
  if (!datatype_valid(static_cast<int>(type)))
    return fail(Result::InvalidArgument, "reduce: invalid data type %d", static_cast<int>(type));
  return Result::Success;
}

Result check_buffers(const void* dst, const void* src, size_t n) {
  if (n != 0 && (dst == nullptr || src == nullptr))
    return fail(Result::InvalidArgument, "reduce: null buffer for %zu elements", n);
  return Result::Success;
}

Result check_scalar(DataType type, const OpScalar* s) {
  if (s == nullptr) return fail(Result::InvalidArgument, "reduce: PreMulSum needs a scalar");
  if (s->type != type)
    return fail(Result::InvalidArgument, "reduce: scalar is %s but the data is %s",
                std::string(datatype_name(s->type)).c_str(), std::string(datatype_name(type)).c_str());
  return Result::Success;
}

void run(DataType type, const KernelArgs& args) {
  if (args.n == 0) return;
  apply_simd_setting_once();
  if (!run_simd(type, args)) run_portable(type, args);
}

KernelArgs make_args(Kernel k, void* dst, const void* src, size_t n, const OpScalar* s) {
  KernelArgs a{k, dst, src, n, 0.0, 0};
  if (s != nullptr) {
    if (datatype_is_float(s->type)) a.float_scalar = s->as_double();
    else a.int_scalar = s->as_bits();
  }
  return a;
}

}  // namespace

Result accumulate(DataType type, RedOp op, void* dst, const void* src, size_t n,
                  const OpScalar* dst_scale, const OpScalar* src_scale) {
  BRAID_TRY(check_type(type));
  BRAID_TRY(check_buffers(dst, src, n));
  if (op != RedOp::PreMulSum && (dst_scale != nullptr || src_scale != nullptr))
    return fail(Result::InvalidArgument, "reduce: scales are only for PreMulSum, not %s",
                std::string(redop_name(op)).c_str());
  Kernel k;
  switch (op) {
    case RedOp::Sum: k = Kernel::Sum; break;
    case RedOp::Prod: k = Kernel::Prod; break;
    case RedOp::Min: k = Kernel::Min; break;
    case RedOp::Max: k = Kernel::Max; break;
    case RedOp::PreMulSum:
      if (dst_scale != nullptr) BRAID_TRY(check_scalar(type, dst_scale));
      if (src_scale != nullptr) BRAID_TRY(check_scalar(type, src_scale));
      if (dst_scale != nullptr && src_scale != nullptr &&
          std::memcmp(dst_scale->bytes, src_scale->bytes, sizeof dst_scale->bytes) != 0) {
        // Two ranks' raw inputs meet: each gets its own rank's scalar.
        run(type, make_args(Kernel::Scale, dst, dst, n, dst_scale));
        run(type, make_args(Kernel::PreMulSrc, dst, src, n, src_scale));
        return Result::Success;
      }
      k = dst_scale ? (src_scale ? Kernel::PreMulBoth : Kernel::PreMulDst)
                    : (src_scale ? Kernel::PreMulSrc : Kernel::Sum);
      break;
    case RedOp::Avg:
      return fail(Result::InvalidArgument,
                  "reduce: Avg must be turned into PreMulSum (floats) or Sum + divide (integers)");
    default:
      return fail(Result::InvalidArgument, "reduce: invalid op %d", static_cast<int>(op));
  }
  run(type, make_args(k, dst, src, n, dst_scale != nullptr ? dst_scale : src_scale));
  return Result::Success;
}

Result scale(DataType type, void* dst, const void* src, size_t n, const OpScalar& s) {
  BRAID_TRY(check_type(type));
  BRAID_TRY(check_buffers(dst, src, n));
  BRAID_TRY(check_scalar(type, &s));
  run(type, make_args(Kernel::Scale, dst, src, n, &s));
  return Result::Success;
}

Result divide(DataType type, void* data, size_t n, uint64_t divisor) {
  BRAID_TRY(check_type(type));
  BRAID_TRY(check_buffers(data, data, n));
  if (divisor == 0) return fail(Result::InvalidArgument, "reduce: divide by zero");
  if (n == 0 || divisor == 1) return Result::Success;
  if (!datatype_is_float(type)) {
    divide_integers_portable(type, data, n, divisor);
    return Result::Success;
  }
  // The reciprocal in the combine precision, as NCCL's PreMulSum(1/n) would hold it.
  const double inverse = 1.0 / static_cast<double>(divisor);
  KernelArgs a{Kernel::Scale, data, data, n,
               type == DataType::Float64 ? inverse : static_cast<double>(static_cast<float>(inverse)), 0};
  run(type, a);
  return Result::Success;
}

}  // namespace braid::reduce
