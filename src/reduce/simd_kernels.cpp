// Highway kernels, compiled once per SIMD target (foreach_target.h) and chosen at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "reduce/simd_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <cstring>

#include "reduce/float_codecs.h"
#include "reduce/kernel.h"

HWY_BEFORE_NAMESPACE();
namespace braid::reduce {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
size_t VectorBytes() { return hn::Lanes(hn::ScalableTag<uint8_t>()); }

// ---------------------------------------------------------------- loading and storing
// Each Io reads one vector of D's lanes worth of stored elements (any alignment) and widens
// them to D's lane type, and narrows back on store.

// Most Ios hold one element per lane; Bf16Io below holds two.
template <class D> struct OneElementPerLane {
  using Loaded = hn::Vec<D>;
  static constexpr size_t kElementsPerLane = 1;
  static Loaded Zero(D d) { return hn::Zero(d); }
  template <class Op> static Loaded Apply(D d, const Op& op, Loaded a, Loaded b) { return op(d, a, b); }
};

template <class T> struct PlainIo : OneElementPerLane<hn::ScalableTag<T>> {
  using D = hn::ScalableTag<T>;
  static constexpr size_t kSize = sizeof(T);
  static hn::Vec<D> Load(D d, const uint8_t* p) { return hn::LoadU(d, reinterpret_cast<const T*>(p)); }
  static void Store(D d, hn::Vec<D> v, uint8_t* p) { hn::StoreU(v, d, reinterpret_cast<T*>(p)); }
};

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;

// Narrow float formats by bit arithmetic, the same recipe as float_codecs.h.
template <class Fmt> hn::Vec<DU> EncodeNarrow(hn::Vec<DF> v) {
  const DF d;
  const DU du;
  const DI di;
  constexpr int kMan = Fmt::kManBits;
  const auto bits = hn::BitCast(du, v);
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto abs_i = hn::BitCast(di, abs);
  const auto sign = hn::ShiftLeft<Fmt::kBits - 1>(hn::ShiftRight<31>(bits));
  // Normal range: round the mantissa to nearest even on the bits, then rebias the exponent.
  const auto lsb = hn::And(hn::ShiftRight<23 - kMan>(abs), hn::Set(du, 1u));
  const auto rounded = hn::Add(hn::Add(abs, hn::Set(du, (1u << (22 - kMan)) - 1)), lsb);
  const auto normal = hn::Sub(hn::ShiftRight<23 - kMan>(rounded), hn::Set(du, uint32_t(127 - Fmt::kBias) << kMan));
  // Subnormal range: adding a power of two makes the FPU round to a multiple of the step.
  const auto magic = hn::Set(d, bits_float(Fmt::kMagicBits));
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(d, abs), magic)), hn::Set(du, Fmt::kMagicBits));
  const auto is_sub = hn::Lt(abs_i, hn::Set(di, int32_t(Fmt::kMinNormalBits)));
  auto code = hn::BitCast(di, hn::IfThenElse(hn::RebindMask(du, is_sub), sub, normal));
  code = hn::Min(code, hn::Set(di, int32_t(Fmt::kLimit)));
  code = hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(v)), hn::Set(di, int32_t(Fmt::kNaN)), code);
  return hn::Or(hn::BitCast(du, code), sign);
}

template <class Fmt> hn::Vec<DF> DecodeNarrow(hn::Vec<DU> code) {
  const DF d;
  const DU du;
  const DI di;
  constexpr int kMan = Fmt::kManBits;
  const auto sign = hn::ShiftLeft<31>(hn::ShiftRight<Fmt::kBits - 1>(code));
  const auto mag = hn::And(code, hn::Set(du, Fmt::kMagMask));
  const auto normal = hn::Add(hn::ShiftLeft<23 - kMan>(mag), hn::Set(du, uint32_t(127 - Fmt::kBias) << 23));
  const auto step = hn::Set(d, bits_float(uint32_t(Fmt::kSubnormalStepExp + 127) << 23));
  const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(d, hn::BitCast(di, mag)), step));
  const auto is_sub = hn::Lt(hn::BitCast(di, mag), hn::Set(di, 1 << kMan));
  auto bits = hn::IfThenElse(hn::RebindMask(du, is_sub), sub, normal);
  if constexpr (Fmt::kHasInf) {
    const auto is_special = hn::Gt(hn::BitCast(di, mag), hn::Set(di, int32_t(Fmt::kMaxFinite)));
    const auto special = hn::Or(hn::Set(du, 0x7F800000u),
                                hn::ShiftLeft<23 - kMan>(hn::And(mag, hn::Set(du, (1u << kMan) - 1))));
    bits = hn::IfThenElse(hn::RebindMask(du, is_special), special, bits);
  } else {
    bits = hn::IfThenElse(hn::Eq(mag, hn::Set(du, Fmt::kNaN)), hn::Set(du, 0x7FC00000u), bits);
  }
  return hn::BitCast(d, hn::Or(bits, sign));
}

// bf16 is the top half of fp32, so a 32-bit lane holding two bf16 splits into two fp32 vectors
// with one shift and one mask (no shuffles): the "even" and "odd" elements, combined lane-wise.
struct Bf16Io {
  using D = DF;
  static constexpr size_t kSize = 2;
  static constexpr size_t kElementsPerLane = 2;
  struct Loaded {
    hn::Vec<DF> even, odd;
  };
  static Loaded Zero(D d) { return {hn::Zero(d), hn::Zero(d)}; }
  template <class Op> static Loaded Apply(D d, const Op& op, Loaded a, Loaded b) {
    return {op(d, a.even, b.even), op(d, a.odd, b.odd)};
  }
  static Loaded Load(D d, const uint8_t* p) {
    const DU du;
    const auto pairs = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    return {hn::BitCast(d, hn::ShiftLeft<16>(pairs)), hn::BitCast(d, hn::And(pairs, hn::Set(du, 0xFFFF0000u)))};
  }
  // The fp32 bits rounded to nearest even in the top 16 bits (low 16 bits are garbage).
  static hn::Vec<DU> Round(hn::Vec<DF> v) {
    const DU du;
    const auto bits = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const auto rounded = hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), lsb);
    // NaN: keep the top payload bits and set the quiet bit (rounding could carry into inf).
    const auto quiet_nan = hn::Or(bits, hn::Set(du, 0x00400000u));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet_nan, rounded);
  }
  static void Store(D, const Loaded& v, uint8_t* p) {
    const DU du;
    const auto pairs = hn::Or(hn::ShiftRight<16>(Round(v.even)), hn::And(Round(v.odd), hn::Set(du, 0xFFFF0000u)));
    hn::StoreU(pairs, du, reinterpret_cast<uint32_t*>(p));
  }
};

template <class Fmt> struct Narrow16Io : OneElementPerLane<DF> {
  using D = DF;
  static constexpr size_t kSize = 2;
  static hn::Vec<D> Load(D, const uint8_t* p) {
    const hn::Rebind<uint16_t, D> d16;
    return DecodeNarrow<Fmt>(hn::PromoteTo(DU(), hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p))));
  }
  static void Store(D, hn::Vec<D> v, uint8_t* p) {
    const hn::Rebind<uint16_t, D> d16;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(DI(), EncodeNarrow<Fmt>(v))), d16, reinterpret_cast<uint16_t*>(p));
  }
};

template <class Fmt> struct Narrow8Io : OneElementPerLane<DF> {
  using D = DF;
  static constexpr size_t kSize = 1;
  static hn::Vec<D> Load(D, const uint8_t* p) {
    const hn::Rebind<uint8_t, D> d8;
    return DecodeNarrow<Fmt>(hn::PromoteTo(DU(), hn::LoadU(d8, p)));
  }
  static void Store(D, hn::Vec<D> v, uint8_t* p) {
    const hn::Rebind<uint8_t, D> d8;
    hn::StoreU(hn::DemoteTo(d8, hn::BitCast(DI(), EncodeNarrow<Fmt>(v))), d8, p);
  }
};

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
// F16C converts with round-to-nearest-even in hardware (AVX2 and later targets).
struct Fp16Io : OneElementPerLane<DF> {
  using D = DF;
  static constexpr size_t kSize = 2;
  static hn::Vec<D> Load(D d, const uint8_t* p) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
  static void Store(D, hn::Vec<D> v, uint8_t* p) {
    const hn::Rebind<hwy::float16_t, D> dh;
    hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
  }
};
#else
// Highway 1.0.3's software fp16 conversion truncates; use the exact bit recipe instead.
using Fp16Io = Narrow16Io<Fp16Format>;
#endif

// ---------------------------------------------------------------- operations

struct SumOp {
  static constexpr bool kReadsDst = true;
  template <class D, class V> V operator()(D, V a, V b) const { return hn::Add(a, b); }
};
struct ProdOp {
  static constexpr bool kReadsDst = true;
  template <class D, class V> V operator()(D, V a, V b) const { return hn::Mul(a, b); }
};
// Float min/max: NaN wins, -0 < +0 (see reduce.h). Integers: plain min/max.
template <bool kMin> struct MinMaxOp {
  static constexpr bool kReadsDst = true;
  template <class D, class V> V operator()(D, V a, V b) const {
    if constexpr (hwy::IsFloat<hn::TFromV<V>>()) {
      auto m = kMin ? hn::Min(a, b) : hn::Max(a, b);
      m = hn::IfThenElse(hn::Eq(a, b), kMin ? hn::Or(a, b) : hn::And(a, b), m);
      const auto nan = hn::Or(hn::IsNaN(a), hn::IsNaN(b));  // (Ne is ordered: false for NaN)
      return hn::IfThenElse(nan, hn::Add(a, b), m);
    } else {
      return kMin ? hn::Min(a, b) : hn::Max(a, b);
    }
  }
};
template <class V, bool kScaleDst, bool kScaleSrc> struct PreMulOp {
  static constexpr bool kReadsDst = true;
  V s;
  template <class D> V operator()(D, V a, V b) const {
    const V x = kScaleDst ? hn::Mul(s, a) : a;
    const V y = kScaleSrc ? hn::Mul(s, b) : b;
    return hn::Add(x, y);
  }
};
template <class V> struct ScaleOp {
  static constexpr bool kReadsDst = false;
  V s;
  template <class D> V operator()(D, V, V b) const { return hn::Mul(s, b); }
};

// ---------------------------------------------------------------- the loop

template <class Io, class Op>
HWY_INLINE void Loop(uint8_t* HWY_RESTRICT dst, const uint8_t* HWY_RESTRICT src, size_t n, const Op& op) {
  using D = typename Io::D;
  const D d;
  const size_t per_vector = hn::Lanes(d) * Io::kElementsPerLane;  // elements per Load
  constexpr size_t kSize = Io::kSize;
  auto load_dst = [&](const uint8_t* p) { return Op::kReadsDst ? Io::Load(d, p) : Io::Zero(d); };
  auto step = [&](uint8_t* o, const uint8_t* x) {
    Io::Store(d, Io::Apply(d, op, load_dst(o), Io::Load(d, x)), o);
  };
  size_t i = 0;
  if (n >= 4 * per_vector) {
    const size_t bytes = per_vector * kSize;
    for (; i <= n - 4 * per_vector; i += 4 * per_vector) {
      uint8_t* o = dst + i * kSize;
      const uint8_t* x = src + i * kSize;
      const auto a0 = load_dst(o), a1 = load_dst(o + bytes), a2 = load_dst(o + 2 * bytes),
                 a3 = load_dst(o + 3 * bytes);
      const auto b0 = Io::Load(d, x), b1 = Io::Load(d, x + bytes), b2 = Io::Load(d, x + 2 * bytes),
                 b3 = Io::Load(d, x + 3 * bytes);
      Io::Store(d, Io::Apply(d, op, a0, b0), o);
      Io::Store(d, Io::Apply(d, op, a1, b1), o + bytes);
      Io::Store(d, Io::Apply(d, op, a2, b2), o + 2 * bytes);
      Io::Store(d, Io::Apply(d, op, a3, b3), o + 3 * bytes);
    }
  }
  for (; i + per_vector <= n; i += per_vector) step(dst + i * kSize, src + i * kSize);
  if (i < n) {
    // The last partial vector goes through a buffer so no byte outside the arrays is touched.
    alignas(64) uint8_t a[HWY_MAX_BYTES * 2] = {};
    alignas(64) uint8_t b[HWY_MAX_BYTES * 2] = {};
    const size_t bytes = (n - i) * kSize;
    std::memcpy(a, dst + i * kSize, bytes);
    std::memcpy(b, src + i * kSize, bytes);
    step(a, b);
    std::memcpy(dst + i * kSize, a, bytes);
  }
}

// Runs one kernel for a float element type; every kernel has a SIMD version.
template <class Io> bool RunFloatIo(const KernelArgs& args) {
  using D = typename Io::D;
  using T = hn::TFromD<D>;
  using V = hn::Vec<D>;
  const D d;
  auto* dst = static_cast<uint8_t*>(args.dst);
  const auto* src = static_cast<const uint8_t*>(args.src);
  const V s = hn::Set(d, static_cast<T>(args.float_scalar));
  switch (args.kernel) {
    case Kernel::Sum: Loop<Io>(dst, src, args.n, SumOp()); return true;
    case Kernel::Prod: Loop<Io>(dst, src, args.n, ProdOp()); return true;
    case Kernel::Min: Loop<Io>(dst, src, args.n, MinMaxOp<true>()); return true;
    case Kernel::Max: Loop<Io>(dst, src, args.n, MinMaxOp<false>()); return true;
    case Kernel::PreMulBoth: Loop<Io>(dst, src, args.n, PreMulOp<V, true, true>{s}); return true;
    case Kernel::PreMulDst: Loop<Io>(dst, src, args.n, PreMulOp<V, true, false>{s}); return true;
    case Kernel::PreMulSrc: Loop<Io>(dst, src, args.n, PreMulOp<V, false, true>{s}); return true;
    case Kernel::Scale: Loop<Io>(dst, src, args.n, ScaleOp<V>{s}); return true;
  }
  return false;
}

// Integers: sums and min/max for all widths; products and pre-multiplies for 32-bit only
// (Highway 1.0.3 has no 8- or 64-bit lane multiply); the rest falls back to portable code.
template <class T> bool RunIntIo(const KernelArgs& args) {
  using Io = PlainIo<T>;
  using D = typename Io::D;
  using V = hn::Vec<D>;
  auto* dst = static_cast<uint8_t*>(args.dst);
  const auto* src = static_cast<const uint8_t*>(args.src);
  switch (args.kernel) {
    case Kernel::Sum: Loop<Io>(dst, src, args.n, SumOp()); return true;
    case Kernel::Min: Loop<Io>(dst, src, args.n, MinMaxOp<true>()); return true;
    case Kernel::Max: Loop<Io>(dst, src, args.n, MinMaxOp<false>()); return true;
    default: break;
  }
  if constexpr (sizeof(T) == 4) {
    const V s = hn::Set(D(), static_cast<T>(args.int_scalar));
    switch (args.kernel) {
      case Kernel::Prod: Loop<Io>(dst, src, args.n, ProdOp()); return true;
      case Kernel::PreMulBoth: Loop<Io>(dst, src, args.n, PreMulOp<V, true, true>{s}); return true;
      case Kernel::PreMulDst: Loop<Io>(dst, src, args.n, PreMulOp<V, true, false>{s}); return true;
      case Kernel::PreMulSrc: Loop<Io>(dst, src, args.n, PreMulOp<V, false, true>{s}); return true;
      case Kernel::Scale: Loop<Io>(dst, src, args.n, ScaleOp<V>{s}); return true;
      default: break;
    }
  }
  return false;
}

bool RunF32(const KernelArgs& a) { return RunFloatIo<PlainIo<float>>(a); }
bool RunF64(const KernelArgs& a) { return RunFloatIo<PlainIo<double>>(a); }
bool RunBf16(const KernelArgs& a) { return RunFloatIo<Bf16Io>(a); }
bool RunFp16(const KernelArgs& a) { return RunFloatIo<Fp16Io>(a); }
bool RunE4m3(const KernelArgs& a) { return RunFloatIo<Narrow8Io<E4m3Format>>(a); }
bool RunE5m2(const KernelArgs& a) { return RunFloatIo<Narrow8Io<E5m2Format>>(a); }
bool RunI8(const KernelArgs& a) { return RunIntIo<int8_t>(a); }
bool RunU8(const KernelArgs& a) { return RunIntIo<uint8_t>(a); }
bool RunI32(const KernelArgs& a) { return RunIntIo<int32_t>(a); }
bool RunU32(const KernelArgs& a) { return RunIntIo<uint32_t>(a); }
bool RunI64(const KernelArgs& a) { return RunIntIo<int64_t>(a); }
bool RunU64(const KernelArgs& a) { return RunIntIo<uint64_t>(a); }

}  // namespace HWY_NAMESPACE
}  // namespace braid::reduce
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "reduce/reduce.h"
#include "reduce/simd.h"

namespace braid::reduce {

HWY_EXPORT(TargetName);
HWY_EXPORT(VectorBytes);

HWY_EXPORT(RunF32);
HWY_EXPORT(RunF64);
HWY_EXPORT(RunBf16);
HWY_EXPORT(RunFp16);
HWY_EXPORT(RunE4m3);
HWY_EXPORT(RunE5m2);
HWY_EXPORT(RunI8);
HWY_EXPORT(RunU8);
HWY_EXPORT(RunI32);
HWY_EXPORT(RunU32);
HWY_EXPORT(RunI64);
HWY_EXPORT(RunU64);

bool run_simd(DataType type, const KernelArgs& args) {
  switch (type) {
    case DataType::Float32: return HWY_DYNAMIC_DISPATCH(RunF32)(args);
    case DataType::Float64: return HWY_DYNAMIC_DISPATCH(RunF64)(args);
    case DataType::Bfloat16: return HWY_DYNAMIC_DISPATCH(RunBf16)(args);
    case DataType::Float16: return HWY_DYNAMIC_DISPATCH(RunFp16)(args);
    case DataType::Float8e4m3: return HWY_DYNAMIC_DISPATCH(RunE4m3)(args);
    case DataType::Float8e5m2: return HWY_DYNAMIC_DISPATCH(RunE5m2)(args);
    case DataType::Int8: return HWY_DYNAMIC_DISPATCH(RunI8)(args);
    case DataType::Uint8: return HWY_DYNAMIC_DISPATCH(RunU8)(args);
    case DataType::Int32: return HWY_DYNAMIC_DISPATCH(RunI32)(args);
    case DataType::Uint32: return HWY_DYNAMIC_DISPATCH(RunU32)(args);
    case DataType::Int64: return HWY_DYNAMIC_DISPATCH(RunI64)(args);
    case DataType::Uint64: return HWY_DYNAMIC_DISPATCH(RunU64)(args);
  }
  return false;
}

const char* simd_target() {
  apply_simd_setting_once();
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

size_t simd_lanes_bytes() {
  apply_simd_setting_once();
  return HWY_DYNAMIC_DISPATCH(VectorBytes)();
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Targets compiled into this file that the CPU supports, best (lowest bit) first. Read once,
// before anything forces a target (SupportedTargets() then reports only the forced one).
const std::vector<int64_t>& usable_targets() {
  static const std::vector<int64_t> targets = [] {
    std::vector<int64_t> out;
    for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) out.push_back(t & -t);
    return out;
  }();
  return targets;
}

std::mutex& force_mutex() {
  static std::mutex mutex;
  return mutex;
}

Result force_locked(std::string_view name) {
  usable_targets();
  if (name.empty()) {
    hwy::SetSupportedTargetsForTest(0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return Result::Success;
  }
  std::string wanted = lower(name);
  for (int64_t t : usable_targets()) {
    if (lower(hwy::TargetName(t)) == wanted) {
      hwy::SetSupportedTargetsForTest(t);
      hwy::GetChosenTarget().Update(hwy::SupportedTargets());
      return Result::Success;
    }
  }
  return fail(Result::InvalidArgument, "reduce: SIMD target '%s' is not available on this CPU/build",
              std::string(name).c_str());
}

}  // namespace

std::vector<std::string_view> simd_targets_available() {
  std::vector<std::string_view> names;
  for (int64_t t : usable_targets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

void apply_simd_setting_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(force_mutex());
    const std::string& wanted = settings().simd;
    if (!wanted.empty() && force_locked(wanted) != Result::Success) {
      BRAID_WARN(Env, "BRAID_SIMD=%s is not available here; using the best target", wanted.c_str());
    }
  });
}

Result force_simd_target(std::string_view name) {
  apply_simd_setting_once();  // so BRAID_SIMD cannot later undo this choice
  std::lock_guard<std::mutex> lock(force_mutex());
  return force_locked(name);
}

}  // namespace braid::reduce
#endif  // HWY_ONCE
