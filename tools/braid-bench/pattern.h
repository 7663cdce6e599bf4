// braid-bench's inputs and expected outputs: every element is a small integer picked from a
// period of 17 by (element index + 5 * rank), small enough that sums, products of 1s and 2s,
// PreMulSum by 2 and power-of-two averages are exact in every type, so a result is either
// right or wrong bit for bit. Where a case cannot be exact (fp8 with many ranks, float Avg over
// a rank count that is not a power of two) results are compared within a stated tolerance.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/types.h"

namespace braid::bench {

// The value PreMulSum multiplies by in the bench (exact in every type).
inline constexpr double kPreMulSumScalar = 2.0;

// Encodes an exactly representable `value` as `type` into `out` (datatype_size bytes).
void encode_value(DataType type, double value, void* out);
double decode_value(DataType type, const void* in);

class Pattern {
 public:
  static constexpr size_t kPeriod = 17;

  // `op` matters only for reducing collectives.
  Pattern(Collective c, DataType type, RedOp op, int nranks);

  // Writes `count` elements of rank `rank`'s logical input, from element `first`, into `out`.
  void fill_input(int rank, size_t first, size_t count, void* out) const;
  // Elements of `got` that differ from rank `rank`'s input elements [first, first + count).
  size_t count_wrong_copy(int rank, size_t first, size_t count, const void* got) const;
  // Elements of `got` that differ from the reduction over all ranks of elements [first, ...).
  size_t count_wrong_reduced(size_t first, size_t count, const void* got) const;

  bool exact() const { return exact_; }

 private:
  size_t count_wrong(const std::array<unsigned char, kPeriod * 8>& period, const double* values,
                     size_t phase, size_t count, const unsigned char* got) const;

  DataType type_;
  size_t esize_;
  int nranks_;
  bool exact_ = true;
  double tolerance_ = 0;  // relative, when !exact_
  std::array<double, kPeriod> input_;      // value of phase k
  std::array<double, kPeriod> reduced_;    // reduction at element phase k (over all ranks)
  std::array<unsigned char, kPeriod * 8> input_bytes_{};
  std::array<unsigned char, kPeriod * 8> reduced_bytes_{};
};

}  // namespace braid::bench
