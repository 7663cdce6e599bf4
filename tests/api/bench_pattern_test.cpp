// braid-bench's host-side logic, on the CPU: nccl-tests' sizing and bandwidth factors, and the
// pattern checker (a simulated correct result counts 0 wrong, each corrupted element counts 1,
// expected reductions are exact where the bench claims so). Also cross-checks the collective
// tests' own float encoder (tests/support/reference.h) against braid's codecs for the values
// both use.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/reference.h"
#include "pattern.h"
#include "reduce/float_codecs.h"
#include "shape.h"

namespace braid::bench {
namespace {

TEST(BenchShape, FollowsNcclTests) {
  const size_t size = 1 << 20;  // floats: 262144 elements
  Shape s = shape_of(Collective::AllReduce, size, DataType::Float32, 4);
  EXPECT_EQ(s.param_count, 262144u);
  EXPECT_EQ(s.row_bytes, size);
  s = shape_of(Collective::AllGather, size, DataType::Float32, 4);
  EXPECT_EQ(s.param_count, 65536u);  // the send count
  EXPECT_EQ(s.recv_count, 262144u);
  EXPECT_EQ(s.send_inplace_offset, 65536u);
  EXPECT_EQ(s.row_bytes, size);
  s = shape_of(Collective::ReduceScatter, size, DataType::Float32, 4);
  EXPECT_EQ(s.param_count, 65536u);  // the receive count
  EXPECT_EQ(s.send_count, 262144u);
  EXPECT_EQ(s.recv_inplace_offset, 65536u);
  s = shape_of(Collective::AllToAll, size, DataType::Float32, 3);
  EXPECT_EQ(s.param_count, 87381u);
  EXPECT_EQ(s.send_count, 87381u * 3);
  // algbw counts the whole buffer for all_gather / reduce_scatter / alltoall; GB = 1e9.
  EXPECT_DOUBLE_EQ(algbw_gbps(Collective::AllGather, shape_of(Collective::AllGather, size, DataType::Float32, 4),
                              DataType::Float32, 4, 1e-3),
                   262144.0 * 4 / 1e9 / 1e-3);
  EXPECT_DOUBLE_EQ(algbw_gbps(Collective::AllReduce, shape_of(Collective::AllReduce, size, DataType::Float32, 4),
                              DataType::Float32, 4, 1e-3),
                   262144.0 * 4 / 1e9 / 1e-3);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::Broadcast, 4), 1.0);
  Collective c;
  ASSERT_TRUE(parse_bench_name("reduce_scatter", &c));
  EXPECT_EQ(c, Collective::ReduceScatter);
  EXPECT_FALSE(parse_bench_name("allreducex", &c));
}

// The reduction of decoded inputs, computed here in double.
double reduce_values(RedOp op, const std::vector<double>& v, int nranks) {
  double acc = v[0];
  for (size_t i = 1; i < v.size(); ++i) {
    switch (op) {
      case RedOp::Prod: acc *= v[i]; break;
      case RedOp::Max: acc = std::max(acc, v[i]); break;
      case RedOp::Min: acc = std::min(acc, v[i]); break;
      default: acc += v[i]; break;
    }
  }
  if (op == RedOp::PreMulSum) acc *= kPreMulSumScalar;
  if (op == RedOp::Avg) acc /= nranks;
  return acc;
}

TEST(BenchPattern, ReductionsAreExactAndCorruptionIsCounted) {
  const size_t count = 1000;
  for (int nranks : {1, 2, 4}) {
    for (DataType t : all_datatypes()) {
      for (RedOp op : all_redops()) {
        const Pattern p(Collective::AllReduce, t, op, nranks);
        if (!datatype_is_float(t) && op == RedOp::Avg) continue;  // checked below separately
        const size_t es = datatype_size(t);
        std::vector<std::vector<unsigned char>> in(nranks, std::vector<unsigned char>(count * es));
        for (int r = 0; r < nranks; ++r) p.fill_input(r, 0, count, in[r].data());
        std::vector<unsigned char> out(count * es);
        for (size_t i = 0; i < count; ++i) {
          std::vector<double> v;
          for (int r = 0; r < nranks; ++r) v.push_back(decode_value(t, &in[r][i * es]));
          double expected = reduce_values(op, v, nranks);
          if (!datatype_is_float(t)) {
            // Products of 1s and 2s may pass the width: keep the low bits, as integers wrap.
            const uint64_t bits = static_cast<uint64_t>(expected);
            const size_t width = es * 8;
            expected = static_cast<double>(width >= 64 ? bits : bits & ((uint64_t{1} << width) - 1));
          }
          encode_value(t, expected, &out[i * es]);
          if (p.exact()) {
            ASSERT_EQ(decode_value(t, &out[i * es]), expected)
                << datatype_name(t) << " " << redop_name(op) << " is not exact at " << i;
          }
        }
        const std::string what = std::string(datatype_name(t)) + " " + std::string(redop_name(op)) +
                                 " ranks " + std::to_string(nranks);
        EXPECT_EQ(p.count_wrong_reduced(0, count, out.data()), 0u) << what;
        out[5 * es] ^= 0x40;
        out[999 * es] ^= 0x40;
        EXPECT_EQ(p.count_wrong_reduced(0, count, out.data()), 2u) << what;
        // An offset view (reduce_scatter's block of rank 1) checks from its own phase.
        EXPECT_EQ(p.count_wrong_reduced(3, count - 3, out.data() + 3 * es), 2u) << what;
        EXPECT_GT(p.count_wrong_reduced(4, count - 3, out.data() + 3 * es), 2u) << what << ": wrong phase must fail";
      }
    }
  }
}

TEST(BenchPattern, CopiesCheckTheirSourceRankAndOffset) {
  for (DataType t : all_datatypes()) {
    const Pattern p(Collective::AllToAll, t, RedOp::Sum, 3);
    const size_t es = datatype_size(t);
    std::vector<unsigned char> block(500 * es);
    p.fill_input(2, 1000, 500, block.data());  // rank 2's elements 1000..1499
    EXPECT_EQ(p.count_wrong_copy(2, 1000, 500, block.data()), 0u);
    EXPECT_GT(p.count_wrong_copy(1, 1000, 500, block.data()), 100u) << "another rank's data must not pass";
    EXPECT_GT(p.count_wrong_copy(2, 1001, 500, block.data()), 100u) << "a shifted block must not pass";
  }
}

TEST(BenchPattern, IntegerAverageTruncates) {
  const Pattern p(Collective::AllReduce, DataType::Int32, RedOp::Avg, 2);
  std::vector<int32_t> a(17), b(17), out(17);
  p.fill_input(0, 0, 17, a.data());
  p.fill_input(1, 0, 17, b.data());
  for (int i = 0; i < 17; ++i) out[i] = (a[i] + b[i]) / 2;
  EXPECT_EQ(p.count_wrong_reduced(0, 17, out.data()), 0u);
}

TEST(ApiReference, EncoderAgreesWithBraidCodecs) {
  for (double v = -32; v <= 32; v += 0.5) {
    // Only values each format holds exactly: integers up to 8 (e5m2) and 16 (e4m3).
    const bool integer = v == std::floor(v);
    if (integer && std::fabs(v) <= 8) {
      EXPECT_EQ(test::encode_exact(test::format_of(DataType::Float8e5m2), v), reduce::float_to_e5m2(static_cast<float>(v))) << v;
    }
    if (integer && std::fabs(v) <= 16) {
      EXPECT_EQ(test::encode_exact(test::format_of(DataType::Float8e4m3), v), reduce::float_to_e4m3(static_cast<float>(v))) << v;
    }
    EXPECT_EQ(test::encode_exact(test::format_of(DataType::Float16), v), reduce::float_to_fp16(static_cast<float>(v))) << v;
    EXPECT_EQ(test::encode_exact(test::format_of(DataType::Bfloat16), v), reduce::float_to_bf16(static_cast<float>(v))) << v;
    for (DataType t : {DataType::Float16, DataType::Bfloat16, DataType::Float8e4m3, DataType::Float8e5m2}) {
      unsigned char b[8] = {};
      test::store_float(t, 1.5, b);
      EXPECT_EQ(test::load_float(t, b), 1.5);
    }
  }
  // Special values decode as the formats define them.
  EXPECT_TRUE(std::isnan(test::decode(test::format_of(DataType::Float8e4m3), 0x7F)));
  EXPECT_EQ(test::decode(test::format_of(DataType::Float8e4m3), 0x7E), 448.0);
  EXPECT_TRUE(std::isinf(test::decode(test::format_of(DataType::Float8e5m2), 0x7C)));
  EXPECT_EQ(test::decode(test::format_of(DataType::Float16), 0x0001), std::ldexp(1.0, -24));
}

}  // namespace
}  // namespace braid::bench
