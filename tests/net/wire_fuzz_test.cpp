// The wire fuzzer: a seeded random sender (wire_peer.h) drives a real receiving transport with
// random, truncated and overlapping frames: hellos cut short or forged, pieces out of range,
// repeated on another stream, of messages never posted or complete already, garbage, streams
// closed mid-piece. Each case is one connection; the receiver may fail it, but must never write
// outside a posted buffer (guard bytes here, ASan in .ci/run), hang, or crash; and a case that
// sends only well-formed messages must deliver them exactly.
//
// The cases: the seeds in fuzz_corpus/seeds.txt (each found a fault once, or covers a frame kind),
// then kCases seeds from a fixed start (NET_FUZZ_CASES and NET_FUZZ_SEED change them for a longer
// run by hand; NET_FUZZ_TRACE names each case as it starts, to find the one that crashed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <random>
#include <sstream>

#include "transport_pair.h"
#include "wire_peer.h"

namespace braid::net {
namespace {
using namespace braid::net::testing;

constexpr int kCases = 150;
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

// What the cases came to, printed at the end: a fuzzer whose cases all end the same way tests little.
struct Tally {
  int refused_hellos = 0, connections = 0, well_formed = 0, delivered = 0, failed = 0, unfinished = 0;
};
Tally g_tally;

struct Receive {
  std::vector<uint8_t> buf;  // capacity, then kGuard guard bytes
  size_t capacity = 0;
  Request* req = nullptr;
  bool done = false, failed = false;
  size_t got = 0;
  std::vector<uint8_t> expect;  // a well-formed case: the message sent
};

class Case {
 public:
  Case(TcpTransport& b, uint64_t seed) : b_(b), rng_(seed) {}

  // Runs the case; "" when the receiver behaved, else what went wrong.
  std::string run() {
    char handle[kNcclNetHandleMaxSize];
    ListenComm* l = nullptr;
    if (b_.listen(0, handle, &l) != Result::Success) return "listen failed";
    std::string verdict = run_on(l, handle);
    if (recv_) b_.close(recv_);
    b_.close_listen(l);
    for (const Receive& r : receives_)
      for (size_t i = r.capacity; i < r.buf.size(); ++i)
        if (r.buf[i] != kGuardByte) return verdict + " a byte written past a receive of " + std::to_string(r.capacity);
    return verdict;
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : size_t(rng_() % n); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::string run_on(ListenComm* l, const char* handle) {
    WirePeer peer(handle);
    auto pump = [&] {
      if (!recv_ && b_.accept(l, &recv_) != Result::Success) setup_failed_ = true;
    };
    const int streams = 1 + int(below(3));
    // Hellos that are no hello: cut short, forged, or garbage. The listener refuses them.
    if (chance(0.15)) {
      peer.control = raw_connect(peer.handle.control);
      Hello h{kWireMagic, WireKind::Hello, peer.handle.nonce ^ (chance(0.5) ? 1 : 0), 1, uint32_t(below(20)), uint32_t(below(20))};
      std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h) + sizeof h);
      if (chance(0.5)) bytes.resize(below(sizeof h));
      if (chance(0.3)) for (auto& c : bytes) c = uint8_t(rng_());
      send_all(peer.control, bytes.data(), bytes.size());
      for (int i = 0; i < 5; ++i) pump();
      g_tally.refused_hellos++;
      return recv_ ? "a connection from a malformed hello" : "";
    }
    if (!peer.send_hello(1, uint32_t(streams)) || !peer.read_reply(pump, 2000)) return "no reply to a good hello";
    if (!peer.open_streams(streams)) return "data streams refused";
    for (int64_t t0 = now_ns(); !recv_ && !setup_failed_ && now_ns() - t0 < 2000000000;) pump();
    if (!recv_) return "no connection from a good hello";
    g_tally.connections++;
    // Receives of random sizes, then frames.
    const bool well_formed = chance(0.3);
    const size_t count = 1 + below(4);
    receives_.resize(count);
    for (Receive& r : receives_) {
      r.capacity = below(3) == 0 ? below(64) : below(8192);
      r.buf.assign(r.capacity + kGuard, kGuardByte);
      b_.irecv(recv_, r.buf.data(), r.capacity, &r.req);
      if (!r.req) return "a receive refused";
    }
    if (well_formed) send_messages(peer, streams);
    else send_frames(peer, streams);
    return drive(well_formed);
  }

  // Every posted message, cut into pieces on random streams, in random order.
  void send_messages(WirePeer& peer, int streams) {
    struct Frame {
      int stream;
      PieceHeader h;
      const uint8_t* data;
    };
    std::vector<Frame> frames;
    for (size_t seq = 0; seq < receives_.size(); ++seq) {
      Receive& r = receives_[seq];
      r.expect.resize(below(r.capacity + 1));
      for (auto& c : r.expect) c = uint8_t(rng_());
      const size_t total = r.expect.size();
      size_t at = 0;
      do {
        size_t n = total == 0 ? 0 : 1 + below(total - at);
        frames.push_back({int(below(size_t(streams))), PieceHeader{kWireMagic, uint32_t(n), seq, total, at}, r.expect.data() + at});
        at += n;
      } while (at < total);
    }
    std::shuffle(frames.begin(), frames.end(), rng_);
    for (const Frame& f : frames) {
      send_all(peer.streams[size_t(f.stream)], &f.h, sizeof f.h);
      send_all(peer.streams[size_t(f.stream)], f.data, f.h.bytes);
    }
  }

  // Frames of every kind, valid or not, in two bursts: a piece's payload (and what follows it on
  // its stream) may come only in the second, after the receiver has tested, and re-posted
  // receives that completed meanwhile: a lagging stream meets a reused request.
  void send_frames(WirePeer& peer, int streams) {
    struct Chunk {
      int fd;
      std::vector<uint8_t> bytes;
    };
    std::vector<Chunk> now, later;
    std::vector<bool> lagging(size_t(streams), false);
    auto put = [&](int s, const void* p, size_t n, bool defer) {
      lagging[size_t(s)] = lagging[size_t(s)] || defer;
      auto* c = static_cast<const uint8_t*>(p);
      (lagging[size_t(s)] ? later : now).push_back({peer.streams[size_t(s)], std::vector<uint8_t>(c, c + n)});
    };
    std::vector<PieceHeader> sent;
    const int frames = 1 + int(below(12));
    for (int f = 0; f < frames; ++f) {
      const int s = int(below(size_t(streams)));
      const uint64_t seq = below(receives_.size() + 2);
      const uint64_t total = chance(0.7) && seq < receives_.size() ? below(receives_[seq].capacity + 1) : below(20000);
      const uint64_t offset = below(total + 1);
      PieceHeader h{kWireMagic, uint32_t(below(total - offset + 1)), seq, total, offset};
      switch (below(9)) {
        case 0:  // the same bytes again, on another stream: overlapping
        case 1:
          if (!sent.empty()) h = sent[below(sent.size())];
          break;
        case 2:  // out of range
          h.bytes = uint32_t(below(9000));
          h.offset = total - below(total + 1) + below(64);
          break;
        case 3:  // no magic
          h.magic = uint32_t(rng_());
          break;
        case 4: {  // a header cut short
          put(s, &h, below(sizeof h), false);
          continue;
        }
        case 5: {  // garbage
          std::vector<uint8_t> junk(below(200));
          for (auto& c : junk) c = uint8_t(rng_());
          put(s, junk.data(), junk.size(), false);
          continue;
        }
        case 6:  // a whole posted message in one piece
          h.seq = below(receives_.size());
          h.offset = 0;
          h.total = below(receives_[h.seq].capacity + 1);
          h.bytes = uint32_t(h.total);
          break;
        default:  // well-formed
          break;
      }
      put(s, &h, sizeof h, false);
      std::vector<uint8_t> payload(std::min<uint64_t>(h.bytes, 9000), uint8_t(f + 1));
      if (chance(0.1)) payload.resize(below(payload.size() + 1));  // cut short
      put(s, payload.data(), payload.size(), chance(0.3));
      sent.push_back(h);
    }
    for (const Chunk& c : now) send_all(c.fd, c.bytes.data(), c.bytes.size());
    test_receives(20000000, true);
    for (const Chunk& c : later) send_all(c.fd, c.bytes.data(), c.bytes.size());
    if (chance(0.2)) shutdown(peer.streams[below(size_t(streams))], SHUT_WR);
  }

  // Tests every receive until each ends, or nothing has moved for `quiet_ns`; with `repost`, a
  // receive that completes is followed by a new, small one (its request is reused).
  void test_receives(int64_t quiet_ns, bool repost) {
    int64_t last_change = now_ns();
    for (;;) {
      bool open = false;
      for (size_t i = 0; i < receives_.size(); ++i) {
        Receive& r = receives_[i];
        if (r.done || r.failed) continue;
        bool done = false;
        Result res = b_.test(r.req, &done, &r.got);
        if (res != Result::Success) r.failed = true;
        if (done) r.done = true;
        if (r.done || r.failed) last_change = now_ns();
        if (done && repost && receives_.size() < 8) {
          Receive& next = receives_.emplace_back();
          next.capacity = below(64);
          next.buf.assign(next.capacity + kGuard, kGuardByte);
          if (b_.irecv(recv_, next.buf.data(), next.capacity, &next.req) != Result::Success || !next.req) next.failed = true;
        }
        open |= !r.done && !r.failed;
      }
      if (!open || now_ns() - last_change > quiet_ns) return;
      std::this_thread::yield();
    }
  }

  std::string drive(bool well_formed) {
    test_receives(well_formed ? 2000000000 : 30000000, !well_formed);
    g_tally.well_formed += well_formed;
    for (const Receive& r : receives_) {
      g_tally.delivered += r.done;
      g_tally.failed += r.failed;
      g_tally.unfinished += !r.done && !r.failed;
    }
    if (!well_formed) return "";
    for (size_t i = 0; i < receives_.size(); ++i) {
      const Receive& r = receives_[i];
      if (!r.done) return "well-formed message " + std::to_string(i) + " did not arrive";
      if (r.got != r.expect.size() || !std::equal(r.expect.begin(), r.expect.end(), r.buf.begin()))
        return "well-formed message " + std::to_string(i) + " arrived wrong";
    }
    return "";
  }

  TcpTransport& b_;
  std::mt19937_64 rng_;
  Comm* recv_ = nullptr;
  bool setup_failed_ = false;
  std::deque<Receive> receives_;  // a deque: buffers stay put as receives are added
};

std::vector<uint64_t> corpus_seeds() {
  std::vector<uint64_t> seeds;
  std::ifstream in(BRAID_NET_FUZZ_CORPUS);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    uint64_t seed;
    if (words >> seed) seeds.push_back(seed);
  }
  return seeds;
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

TEST(NetWireFuzz, RandomTruncatedAndOverlappingFrames) {
  auto b = make_host(short_setup_options());
  std::vector<uint64_t> seeds = corpus_seeds();
  ASSERT_FALSE(seeds.empty()) << "no corpus at " << BRAID_NET_FUZZ_CORPUS;
  const uint64_t cases = env_or("NET_FUZZ_CASES", kCases), start = env_or("NET_FUZZ_SEED", 1);
  for (uint64_t i = 0; i < cases; ++i) seeds.push_back(start + i);
  int failures = 0;
  const bool trace = std::getenv("NET_FUZZ_TRACE") != nullptr;  // names each case before it runs
  for (uint64_t seed : seeds) {
    if (trace) fprintf(stderr, "case %llu\n", (unsigned long long)seed);
    std::string verdict = Case(*b, seed).run();
    if (!verdict.empty()) {
      ADD_FAILURE() << "seed " << seed << ": " << verdict;
      if (++failures > 5) break;
    }
  }
  const Tally& t = g_tally;
  printf("%zu cases: %d malformed hellos refused, %d connections (%d well-formed); receives: %d delivered, %d failed, %d left open\n",
         seeds.size(), t.refused_hellos, t.connections, t.well_formed, t.delivered, t.failed, t.unfinished);
  EXPECT_GT(t.delivered, 0);
  EXPECT_GT(t.failed, 0);
}

}  // namespace
}  // namespace braid::net
