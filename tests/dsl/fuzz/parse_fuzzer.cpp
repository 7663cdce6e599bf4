// libFuzzer target: any text either fails to parse cleanly or parses to a program that prints
// canonically, reads back identically, and validates (pass or fail) without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dsl/text.h"
#include "dsl/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace braid::dsl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Program p;
  if (parse_program(text, &p) != braid::Result::Success) return 0;
  const std::string canonical = print_program(p);
  Program again;
  if (parse_program(canonical, &again) != braid::Result::Success || !(again == p) ||
      print_program(again) != canonical)
    std::abort();
  for (bool in_place : {false, true}) {
    ValidateOptions o;
    o.in_place = in_place;
    const ValidationReport r = validate(p, o);
    if (!r.ok && r.message.empty()) std::abort();
  }
  return 0;
}
