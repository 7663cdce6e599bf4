// The program's text form: a canonical printer and a line-oriented, whitespace-tolerant parser
// that reports the line and column of the first offending token.
#include "dsl/text.h"

#include <cstdint>
#include <optional>
#include <utility>

#include "dsl/instruction_text.h"

namespace braid::dsl {

namespace {

// Bounds that keep every number far from int overflow and every allocation small.
constexpr int64_t kMaxIndex = (int64_t{1} << 31) - 1;  // chunk/slot indices, NUMA nodes, versions
constexpr int64_t kMaxRanksOrChunks = 65536;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word_char(char c) { return is_letter(c) || is_digit(c) || c == '_' || c == '-'; }

// Reads tokens from one line; the first failure is kept with its 1-based column.
class LineReader {
 public:
  LineReader(std::string_view line, int line_number) : line_(line), line_number_(line_number) {}

  const std::optional<ParseError>& error() const { return error_; }

  void skip_space() {
    while (pos_ < line_.size() && is_space(line_[pos_])) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= line_.size();
  }
  size_t position() {
    skip_space();
    return pos_;
  }

  bool fail_at(size_t at, std::string message) {
    if (!error_) error_ = ParseError{line_number_, static_cast<int>(at) + 1, std::move(message)};
    return false;
  }

  // What stands at the cursor, for messages: "'xyz'" or "end of line".
  std::string found() {
    skip_space();
    if (pos_ >= line_.size()) return "end of line";
    size_t end = pos_;
    if (is_word_char(line_[end])) {
      while (end < line_.size() && is_word_char(line_[end]) && end - pos_ < 24) ++end;
    } else {
      ++end;
    }
    std::string s = "'";
    for (size_t i = pos_; i < end; ++i) {
      const unsigned char c = static_cast<unsigned char>(line_[i]);
      if (c < 0x20 || c >= 0x7f) {
        static const char kHex[] = "0123456789abcdef";
        s += "\\x";
        s += kHex[c >> 4];
        s += kHex[c & 15];
      } else {
        s += static_cast<char>(c);
      }
    }
    return s + "'";
  }

  bool peek(std::string_view token) {
    skip_space();
    return line_.substr(pos_, token.size()) == token;
  }

  bool expect(std::string_view token, std::string_view context) {
    if (peek(token)) {
      pos_ += token.size();
      return true;
    }
    return fail_at(pos_, "expected '" + std::string(token) + "' " + std::string(context) +
                             ", found " + found());
  }

  // A run of letters, digits, '_' and '-' (empty when none).
  std::string_view word() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < line_.size() && is_word_char(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }

  // A decimal number in [0, max]; `what` names it in messages.
  bool number(int64_t max, std::string_view what, int64_t* value) {
    skip_space();
    const size_t start = pos_;
    if (pos_ < line_.size() && (line_[pos_] == '-' || line_[pos_] == '+') && pos_ + 1 < line_.size() &&
        is_digit(line_[pos_ + 1])) {
      return fail_at(start, std::string(what) + " must be a non-negative number without sign");
    }
    if (pos_ >= line_.size() || !is_digit(line_[pos_]))
      return fail_at(start, "expected " + std::string(what) + ", found " + found());
    int64_t v = 0;
    bool too_large = false;
    while (pos_ < line_.size() && is_digit(line_[pos_])) {
      if (!too_large) {
        v = v * 10 + (line_[pos_] - '0');
        too_large = v > max;
      }
      ++pos_;
    }
    if (pos_ < line_.size() && is_word_char(line_[pos_]))
      return fail_at(pos_, "unexpected " + found() + " after " + std::string(what));
    if (too_large)
      return fail_at(start, std::string(what) + " too large (at most " + std::to_string(max) + ")");
    *value = v;
    return true;
  }

  // in[i] | out[i] | hostN[i] | host[i]
  bool location(Location* out) {
    skip_space();
    const size_t start = pos_;
    while (pos_ < line_.size() && is_letter(line_[pos_])) ++pos_;
    const std::string_view name = line_.substr(start, pos_ - start);
    Location l;
    if (name == "in") {
      l.buffer = Buffer::Input;
    } else if (name == "out") {
      l.buffer = Buffer::Output;
    } else if (name == "host") {
      l.buffer = Buffer::Host;
      if (pos_ < line_.size() && is_digit(line_[pos_])) {
        int64_t numa = 0;
        if (!number(kMaxIndex, "NUMA node", &numa)) return false;
        l.numa = static_cast<int>(numa);
      }
    } else if (name.empty()) {
      pos_ = start;
      return fail_at(start, "expected a location (in[i], out[i] or hostN[i]), found " + found());
    } else {
      pos_ = start;
      return fail_at(start, "unknown buffer '" + std::string(name) +
                                "' (expected in[i], out[i] or hostN[i])");
    }
    // The index follows the name directly ("in[3]"); spaces inside the brackets are tolerated.
    if (pos_ >= line_.size() || line_[pos_] != '[') {
      const std::string what = found();  // also steps over spaces: point at what stands there
      return fail_at(pos_, "expected '[' after '" + std::string(name) + "', found " + what);
    }
    ++pos_;
    int64_t index = 0;
    if (!number(kMaxIndex, "index", &index)) return false;
    if (!expect("]", "after the index")) return false;
    l.index = static_cast<int>(index);
    *out = l;
    return true;
  }

 private:
  std::string_view line_;
  int line_number_;
  size_t pos_ = 0;
  std::optional<ParseError> error_;
};

bool parse_header(LineReader& r, Program* p) {
  r.word();  // "program", checked by the caller
  const size_t coll_at = r.position();
  const std::string_view coll_name = r.word();
  if (coll_name.empty()) return r.fail_at(coll_at, "expected a collective name, found " + r.found());
  const auto coll = parse_collective(coll_name);
  if (!coll) return r.fail_at(coll_at, "unknown collective '" + std::string(coll_name) + "'");
  p->collective = *coll;
  bool have_ranks = false, have_chunks = false, have_root = false;
  size_t root_at = 0;
  while (!r.at_end()) {
    const size_t key_at = r.position();
    const std::string_view key = r.word();
    bool* seen = key == "ranks" ? &have_ranks : key == "chunks" ? &have_chunks : key == "root" ? &have_root : nullptr;
    if (!seen) {
      if (key.empty()) return r.fail_at(key_at, "unexpected " + r.found() + " in the program header");
      return r.fail_at(key_at, "unknown header field '" + std::string(key) +
                                   "' (expected ranks=, chunks=, root=)");
    }
    if (*seen) return r.fail_at(key_at, "header field '" + std::string(key) + "' given twice");
    *seen = true;
    if (!r.expect("=", "after '" + std::string(key) + "'")) return false;
    const size_t value_at = r.position();
    int64_t v = 0;
    if (key == "root") {
      root_at = value_at;
      if (!r.number(kMaxRanksOrChunks - 1, "root", &v)) return false;
      p->root = static_cast<int>(v);
    } else {
      if (!r.number(kMaxRanksOrChunks, key == "ranks" ? "ranks" : "chunks", &v)) return false;
      if (v < 1) return r.fail_at(value_at, std::string(key) + " must be at least 1");
      (key == "ranks" ? p->ranks : p->chunks) = static_cast<int>(v);
    }
  }
  if (!have_ranks) return r.fail_at(r.position(), "program header lacks ranks=<R>");
  if (!have_chunks) return r.fail_at(r.position(), "program header lacks chunks=<C>");
  if (have_root && p->root >= p->ranks)
    return r.fail_at(root_at, "root " + std::to_string(p->root) + " out of range (ranks=" +
                                  std::to_string(p->ranks) + ")");
  return true;
}

bool parse_instruction(LineReader& r, Instruction* ins) {
  const size_t op_at = r.position();
  const std::string_view op = r.word();
  bool known = false;
  for (Opcode o : {Opcode::D2H, Opcode::H2H, Opcode::Reduce, Opcode::H2D, Opcode::Copy}) {
    if (op == opcode_name(o)) {
      ins->op = o;
      known = true;
    }
  }
  if (!known) {
    if (op.empty()) return r.fail_at(op_at, "expected an instruction, found " + r.found());
    return r.fail_at(op_at, "unknown opcode '" + std::string(op) +
                                "' (expected D2H, H2H, REDUCE, H2D or COPY)");
  }
  if (!r.location(&ins->src)) return false;
  if (!r.expect("->", "between source and destination")) return false;
  if (!r.location(&ins->dst)) return false;
  if (r.at_end()) return true;
  const size_t deps_at = r.position();
  const std::string what = r.found();
  if (r.word() != "deps")
    return r.fail_at(deps_at, "unexpected " + what + " after the instruction (expected 'deps:' or end of line)");
  if (!r.expect(":", "after 'deps'")) return false;
  do {
    Dependency d;
    if (!r.location(&d.location)) return false;
    if (!r.expect(">=", "after the dependency's location")) return false;
    int64_t v = 0;
    if (!r.number(kMaxIndex, "version", &v)) return false;
    d.version = static_cast<int>(v);
    ins->deps.push_back(d);
    if (r.at_end()) return true;
  } while (r.expect(",", "between dependencies"));
  return false;
}

}  // namespace

std::string print_program(const Program& p) {
  std::string s = "program " + std::string(collective_name(p.collective)) +
                  " ranks=" + std::to_string(p.ranks) + " chunks=" + std::to_string(p.chunks) +
                  " root=" + std::to_string(p.root) + "\n";
  for (int r = 0; r < p.ranks; ++r) {
    s += "# Rank " + std::to_string(r) + "\n";
    if (static_cast<size_t>(r) >= p.rank_instructions.size()) continue;
    for (const Instruction& ins : p.rank_instructions[r]) {
      s += instruction_text(ins);
      s += '\n';
    }
  }
  return s;
}

Result parse_program(std::string_view text, Program* out, ParseError* error) {
  Program p;
  bool have_header = false;
  int section = -1;
  std::vector<bool> section_seen;
  std::optional<ParseError> failure;
  int line_number = 0;
  size_t begin = 0;
  while (begin <= text.size() && !failure) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    LineReader r(line, line_number);
    if (r.at_end()) continue;  // blank
    const size_t first = r.position();
    if (line[first] == '#') {
      LineReader probe(line.substr(first + 1), line_number);
      if (probe.word() != "Rank") continue;  // a comment
      r.expect("#", "");
      r.word();
      const size_t number_at = r.position();
      int64_t rank = 0;
      if (!have_header) {
        r.fail_at(first, "section before the 'program' header");
      } else if (r.number(kMaxRanksOrChunks, "rank", &rank)) {
        if (rank >= p.ranks) {
          r.fail_at(number_at, "rank " + std::to_string(rank) + " out of range (ranks=" +
                                   std::to_string(p.ranks) + ")");
        } else if (section_seen[rank]) {
          r.fail_at(number_at, "section for rank " + std::to_string(rank) + " appears twice");
        } else if (!r.at_end()) {
          r.fail_at(r.position(), "unexpected " + r.found() + " after the section's rank");
        } else {
          section_seen[rank] = true;
          section = static_cast<int>(rank);
        }
      }
    } else if (line.substr(first, 7) == "program" &&
               (first + 7 == line.size() || !is_word_char(line[first + 7]))) {
      if (have_header) {
        r.fail_at(first, "a second 'program' header");
      } else if (parse_header(r, &p)) {
        have_header = true;
        p.rank_instructions.assign(p.ranks, {});
        section_seen.assign(p.ranks, false);
      }
    } else if (!have_header) {
      r.fail_at(first, "expected the header 'program <collective> ranks=<R> chunks=<C> root=<r>', found " +
                           r.found());
    } else if (section < 0) {
      r.fail_at(first, "instruction before any '# Rank N' section");
    } else {
      Instruction ins;
      if (parse_instruction(r, &ins)) p.rank_instructions[section].push_back(std::move(ins));
    }
    failure = r.error();
  }
  if (!failure && !have_header)
    failure = ParseError{1, 1, "missing the header 'program <collective> ranks=<R> chunks=<C> root=<r>'"};
  if (failure) {
    if (error) *error = *failure;
    return fail(Result::InvalidArgument, "line %d, column %d: %s", failure->line, failure->column,
                failure->message.c_str());
  }
  *out = std::move(p);
  if (error) *error = {};
  return Result::Success;
}

}  // namespace braid::dsl
