#include "net/tcp_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "net/clock.h"
#include "net/net_log.h"
#include "net/relay_shm.h"
#include "net/sockets.h"
#include "net/token_bucket.h"

namespace braid::net {

namespace {
constexpr int kRequestsPerComm = 64;  // NCCL keeps at most 32 in flight per connection
constexpr uint64_t kNoTotal = ~uint64_t(0);

uint64_t random64() {
  static std::mutex mu;
  static std::mt19937_64 gen(std::random_device{}() ^ uint64_t(now_ns()) ^ (uint64_t(getpid()) << 32));
  std::lock_guard<std::mutex> lock(mu);
  uint64_t v = 0;
  while (v == 0) v = gen();
  return v;
}
}  // namespace

struct Request {
  std::atomic<bool> used{false};
  bool is_send = false;
  Comm* comm = nullptr;
  char* data = nullptr;
  size_t capacity = 0;          // send: the message size; receive: the buffer size
  uint64_t seq = 0;
  std::atomic<int> pieces_left{0};            // send
  std::atomic<uint64_t> total{kNoTotal};      // receive: the sender's size once a header came
  std::atomic<uint64_t> received{0};          // receive
  // Receive: the byte ranges of the message that pieces have claimed (offset -> end, adjacent
  // ones merged; under comm->mu). A piece is written only into bytes no other piece claimed, so
  // the message completes only once every piece writing into it is done.
  std::map<uint64_t, uint64_t> claimed;
};

namespace {
constexpr size_t kMaxClaimedRanges = 65536;  // a peer cutting a message finer is refused

// Claims [offset, offset + bytes) of a receive's message for one piece; false when a byte of it
// is claimed already, or for a second piece of an empty message.
bool claim_piece(Request* r, uint64_t offset, uint64_t bytes) {
  auto& m = r->claimed;
  if (bytes == 0) return m.empty() && m.emplace(0, 0).second;
  uint64_t start = offset, end = offset + bytes;
  auto next = m.upper_bound(offset);
  if (next != m.end() && next->first < end) return false;
  if (next != m.begin()) {
    auto prev = std::prev(next);
    if (prev->second > offset) return false;
    if (prev->second == offset) {
      start = prev->first;
      m.erase(prev);
    }
  }
  if (next != m.end() && next->first == end) {
    end = next->second;
    m.erase(next);
  }
  if (m.size() >= kMaxClaimedRanges) return false;
  m.emplace(start, end);
  return true;
}
}  // namespace

struct SendPiece {
  Request* request;
  PieceHeader header;
  const char* data;
  bool owner;  // on the connection's direct NIC: counts as its worker's own traffic
  // A relayed piece: `data` is `slot`, lent by `pool` and filled by the copy `ticket`.
  void* slot = nullptr;
  SharedRelayPool* pool = nullptr;
  CopyTicket ticket{};
  SharedRelayPool* own_pool = nullptr;  // an owner piece counted in the pool this process offers
  int nic = 0;                          // the local NIC it goes on
};

enum class StreamKind { Data, Control };

struct Stream {
  int fd = -1;
  int nic = 0;             // local NIC
  int lane = 0;            // the progress thread that moves it (index in State::threads)
  StreamKind kind = StreamKind::Data;
  Comm* comm = nullptr;
  std::atomic<bool> dead{false};
  // Sending (queue under comm->mu; the rest only on the NIC thread).
  std::deque<SendPiece> queue;
  std::atomic<size_t> queued_bytes{0};
  size_t front_sent = 0;
  // Receiving (NIC thread only).
  PieceHeader header{};
  size_t header_got = 0;
  std::atomic<bool> parked{false};  // header read, its message not posted yet
  std::atomic<uint64_t> parked_seq{0};  // that message
  Request* target = nullptr;
  size_t payload_got = 0;
  // Control: credits.
  Credit credit_in{};
  size_t credit_got = 0;
  Credit credit_out{};
  size_t credit_put = sizeof(Credit);
  uint32_t credit_sent_mask = ~0u;
};

struct Comm {
  bool is_send = false;
  int direct = 0;
  uint64_t worker = 0;
  int monitor_slot = -1;
  int remote_nic_count = 1;
  std::mutex mu;
  std::vector<std::unique_ptr<Stream>> streams;  // data streams, nic-major
  std::unique_ptr<Stream> control;
  Request requests[kRequestsPerComm];
  uint64_t next_seq = 0;
  std::map<uint64_t, Request*> posted;  // receive: seq -> request
  std::atomic<uint32_t> remote_idle{~0u};
  std::atomic<int> error{0};            // a Result; sticky
  // Threads inside a read into a receive buffer: a failure is reported only once none is, so that
  // no byte lands in a buffer the caller may free on hearing of it.
  std::atomic<int> buffer_readers{0};
  std::atomic<int> dead_streams{0};
  uint32_t rotate = 0;
  ChoiceDamper damper;                  // under mu
  CommStats stats;                      // under mu
};

// A connection to a listener whose hello is not all in yet. Hellos are read without blocking,
// from every such connection at once, each within the set-up deadline: a silent or slow
// stranger delays no one.
struct Greeting {
  int fd = -1;
  int nic = -1;  // a data connection's local NIC; -1: the control connection
  int64_t deadline_ns = 0;
  size_t got = 0;
  union {
    Hello hello;
    StreamHello stream;
  } msg{};
  size_t want() const { return nic < 0 ? sizeof(Hello) : sizeof(StreamHello); }
};

struct EarlyStream {  // a data connection that presented its hello before its connection's turn
  int fd;
  int nic;
  int64_t deadline_ns;
};

struct ListenComm {
  int nic = 0;
  uint64_t nonce = 0;
  int control_fd = -1;
  std::vector<int> data_fds;            // one listener per local NIC
  std::vector<WireAddress> data_addrs;
  std::vector<Greeting> greeting;       // hellos being read
  std::deque<Greeting> ready;           // control connections with a valid hello, in turn
  std::multimap<uint64_t, EarlyStream> early;  // by connection id
  // The connection being accepted: its control connection, hello and data streams so far.
  int current_fd = -1;
  Hello hello{};
  std::vector<std::pair<int, int>> accepted;  // (fd, local nic)
  int64_t deadline_ns = 0;
};

struct PendingConnect {
  ListenHandle handle{};
  int stage = 0;
  int fd = -1;
  uint64_t connection = 0;
  int64_t deadline_ns = 0;  // the whole set-up's
  std::vector<uint8_t> reply;
  size_t reply_got = 0;
};

// One progress thread of a NIC (a lane): one thread copies about 1.8 GB/s through the kernel on
// the GPU machine's loopback, so a NIC faster than that needs several (BRAID_NET_THREADS).
struct NicThread {
  std::thread thread;
  std::mutex mu;  // guards `streams`; held while the thread works on them
  std::vector<Stream*> streams;
  int wake_fd = -1;
  TokenBucket bucket;
  std::atomic<bool> stop{false};
  // The NIC's pace: bytes sent per second of time with bytes waiting to go (under mu). Traffic
  // braid cannot see (another program's flow) slows it, so the cut of a message follows it.
  uint64_t window_bytes = 0;
  int64_t window_busy_ns = 0, last_ns = 0;
  bool backlogged = false;
  std::atomic<double> pace{0};  // bytes per second; 0: not measured yet
  void account(int64_t now, bool backlog_now);
};

void NicThread::account(int64_t now, bool backlog_now) {
  if (backlogged && last_ns) window_busy_ns += now - last_ns;
  last_ns = now;
  backlogged = backlog_now;
  if (window_busy_ns < 20000000) return;  // a sample per 20 ms of sending
  double sample = double(window_bytes) * 1e9 / double(window_busy_ns);
  double old = pace.load();
  pace.store(old > 0 ? 0.7 * old + 0.3 * sample : sample);
  window_bytes = 0;
  window_busy_ns = 0;
}

struct TcpTransport::State {
  TcpOptions opt;
  std::shared_ptr<NicMonitor> monitor;
  std::vector<std::unique_ptr<NicThread>> threads;
  std::mutex pending_mu;
  std::map<void*, PendingConnect> pending;  // by handle memory: NCCL calls connect again with it
  std::vector<uint64_t> workers;            // this transport's worker on each direct NIC
  std::atomic<int> lane_turn{0};            // where the next connection starts dealing its streams
  // Relays (D1). Pools are kept mapped until the transport ends (pieces point into them).
  std::mutex relay_mu;
  std::shared_ptr<SharedRelayPool> offered[kMaxNics];   // the pools this process owns
  bool offer_tried[kMaxNics] = {};
  std::shared_ptr<SharedRelayPool> attached[kMaxNics];  // other owners' pools
  int64_t attach_tried_ns[kMaxNics] = {};
  std::vector<std::shared_ptr<SharedRelayPool>> retired;  // pools whose owner left
  std::unique_ptr<PeerCopy> copier = std::make_unique<MemcpyPeerCopy>();
  std::atomic<uint64_t> relayed{0}, relay_fallback{0};

  bool relays_on() const { return opt.relay_bytes > 0 && !opt.relay_name.empty(); }
  std::string relay_name(int nic) const { return opt.relay_name + "-" + std::to_string(nic); }
  void offer_relay(int nic);
  SharedRelayPool* own_pool(int nic);
  SharedRelayPool* relay_pool_for(int nic, int64_t now);
  void finish_piece(Comm* c, const SendPiece& p);
  void drop_queue(Stream* s);

  // Each NIC has `threads_per_nic` progress threads (lanes); NIC i's are i * threads_per_nic on.
  int lane_of(int nic, int k) const { return nic * opt.threads_per_nic + (k & 0x7fffffff) % opt.threads_per_nic; }
  void wake(int lane) {
    uint64_t one = 1;
    ssize_t r = write(threads[size_t(lane)]->wake_fd, &one, sizeof one);
    (void)r;
  }
  void wake_all(Comm* c) {
    std::vector<bool> seen(threads.size(), false);
    for (auto& s : c->streams) seen[size_t(s->lane)] = true;
    if (c->control) seen[size_t(c->control->lane)] = true;
    for (int i = 0; i < int(threads.size()); ++i)
      if (seen[size_t(i)]) wake(i);
  }
  void fail_comm(Comm* c, Result r) {
    int expected = 0;
    c->error.compare_exchange_strong(expected, int(r));
  }
  void stream_dead(Stream* s) {
    if (s->dead.exchange(true)) return;
    s->comm->dead_streams.fetch_add(1);
  }

  void run(int lane);
  bool progress_send(NicThread& t, Stream* s, int64_t now, int64_t* wait_ns);
  bool progress_recv(Stream* s, int64_t now);
  bool progress_control(Stream* s, int64_t now);
  void attach(Comm* c);
  void detach(Comm* c);
  void help(Comm* c);
  // Weights for cutting a message over the NICs of `mask`: their paces once all are measured
  // (none below a tenth of the fastest, so a slow NIC keeps a share and its pace stays current);
  // empty (equal shares) before.
  // A NIC's pace is the sum of its lanes' (a lane that never had bytes waiting has none).
  std::vector<double> paces(uint32_t mask) const {
    std::vector<double> w(opt.nics.size(), 0);
    double top = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (!(mask & (1u << i))) continue;
      for (int k = 0; k < opt.threads_per_nic; ++k) w[i] += threads[size_t(lane_of(int(i), k))]->pace.load();
      if (w[i] <= 0) return {};
      top = std::max(top, w[i]);
    }
    for (double& x : w) x = x > 0 ? std::max(x, top / 10) : 0;
    return w;
  }
  Result build_comm(bool is_send, int direct, int remote_nics, int control_fd,
                    const std::vector<std::pair<int, int>>& data, Comm** out);
};

// --- progress ---------------------------------------------------------------------------------

bool TcpTransport::State::progress_send(NicThread& t, Stream* s, int64_t now, int64_t* wait_ns) {
  Comm* c = s->comm;
  bool moved = false;
  if (c->error.load()) {  // the connection failed: its queued pieces never go; free their slots
    drop_queue(s);
    return moved;
  }
  for (;;) {
    SendPiece* p;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (s->queue.empty()) return moved;
      p = &s->queue.front();
    }
    if (p->slot && s->front_sent == 0 && !copier->ready(p->ticket)) {
      *wait_ns = std::min<int64_t>(*wait_ns, 20000);  // the peer copy is not done yet
      return moved;
    }
    const size_t total = sizeof(PieceHeader) + p->header.bytes;
    size_t allowed = t.bucket.available(now);
    if (allowed == 0) {
      *wait_ns = std::min(*wait_ns, t.bucket.wait_ns(now, std::min<size_t>(total - s->front_sent, 65536)));
      return moved;
    }
    iovec iov[2];
    int n = 0;
    size_t want = 0;
    if (s->front_sent < sizeof(PieceHeader)) {
      iov[n++] = {reinterpret_cast<char*>(&p->header) + s->front_sent, sizeof(PieceHeader) - s->front_sent};
      want += sizeof(PieceHeader) - s->front_sent;
      if (p->header.bytes) {
        iov[n++] = {const_cast<char*>(p->data), p->header.bytes};
        want += p->header.bytes;
      }
    } else {
      size_t done = s->front_sent - sizeof(PieceHeader);
      iov[n++] = {const_cast<char*>(p->data) + done, p->header.bytes - done};
      want += p->header.bytes - done;
    }
    // Trim the write to the tokens there are.
    if (allowed < want) {
      size_t keep = allowed;
      for (int i = 0; i < n; ++i) {
        iov[i].iov_len = std::min(iov[i].iov_len, keep);
        keep -= iov[i].iov_len;
      }
      while (n > 0 && iov[n - 1].iov_len == 0) --n;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size_t(n);
    ssize_t r = sendmsg(s->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return moved;
      BRAID_NET_WARN("send on NIC %d: %s", s->nic, strerror(errno));
      fail_comm(c, Result::RemoteError);
      stream_dead(s);
      drop_queue(s);
      return moved;
    }
    t.bucket.consume(size_t(r));
    t.window_bytes += size_t(r);
    moved = true;
    s->front_sent += size_t(r);
    if (s->front_sent < total) continue;
    // The piece is out.
    s->front_sent = 0;
    Request* req = p->request;
    SendPiece done = *p;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      s->queue.pop_front();
    }
    s->queued_bytes.fetch_sub(done.header.bytes);
    finish_piece(c, done);
    req->pieces_left.fetch_sub(1);
  }
}

// A piece that left (sent) or never will (its connection failed or closed): its relay slot goes
// back to the pool and its owner accounting ends.
void TcpTransport::State::finish_piece(Comm* c, const SendPiece& p) {
  if (p.slot) p.pool->release(p.slot);
  if (p.own_pool) p.own_pool->add_owner_inflight(-int64_t(p.header.bytes));
  if (p.owner) monitor->end(c->direct, c->monitor_slot, now_ns());
}

// Only the stream's lane (or close, once the connection is detached) calls this.
void TcpTransport::State::drop_queue(Stream* s) {
  std::deque<SendPiece> gone;
  {
    std::lock_guard<std::mutex> lock(s->comm->mu);
    gone.swap(s->queue);
  }
  s->front_sent = 0;
  s->queued_bytes.store(0);
  for (const SendPiece& p : gone) finish_piece(s->comm, p);
}

void TcpTransport::State::offer_relay(int nic) {
  if (!relays_on() || nic < 0 || nic >= int(opt.nics.size())) return;
  std::lock_guard<std::mutex> lock(relay_mu);
  if (offer_tried[nic]) return;
  offer_tried[nic] = true;
  std::unique_ptr<SharedRelayPool> p;
  if (SharedRelayPool::offer(relay_name(nic), opt.relay_bytes, opt.relay_slot_bytes, &p) != Result::Success) {
    BRAID_NET_WARN("NIC %d: no relay pool (%s); other GPUs' pieces will not be relayed through it", nic, last_error());
    return;
  }
  if (!p) {
    BRAID_NET_INFO("NIC %d: relay pool offered by another process of this host already", nic);
    return;
  }
  BRAID_NET_INFO("NIC %d: relay pool offered, %zu bytes in slots of %zu (cap %zu)", nic, p->region_bytes(),
                 p->slot_bytes(), opt.relay_bytes);
  offered[nic] = std::move(p);
}

SharedRelayPool* TcpTransport::State::own_pool(int nic) {
  if (!relays_on()) return nullptr;
  std::lock_guard<std::mutex> lock(relay_mu);
  return offered[nic].get();
}

// The pool of `nic`'s owner GPU on this host, another process's (attached when first needed,
// looked for again at most every 100 ms while there is none). None for a NIC whose pool this
// process offered: that NIC is its own GPU's, reached without a peer copy.
SharedRelayPool* TcpTransport::State::relay_pool_for(int nic, int64_t now) {
  std::lock_guard<std::mutex> lock(relay_mu);
  if (offered[nic]) return nullptr;
  auto& a = attached[nic];
  if (a && !a->owner_alive()) {
    BRAID_NET_INFO("NIC %d: the relay pool's owner left; no relays through it", nic);
    retired.push_back(std::move(a));
    a.reset();
  }
  if (!a && now - attach_tried_ns[nic] > 100000000) {
    attach_tried_ns[nic] = now;
    std::unique_ptr<SharedRelayPool> p;
    if (SharedRelayPool::attach(relay_name(nic), &p) == Result::Success && p) {
      BRAID_NET_INFO("NIC %d: relaying through its owner's pool (%zu bytes, slots of %zu)", nic, p->region_bytes(),
                     p->slot_bytes());
      a = std::move(p);
    }
  }
  return a.get();
}

bool TcpTransport::State::progress_recv(Stream* s, int64_t now) {
  Comm* c = s->comm;
  bool moved = false;
  for (;;) {
    // A failed connection's streams are retired: they write no more into receive buffers, and
    // bytes left in their sockets wake no thread.
    if (c->error.load()) {
      stream_dead(s);
      return moved;
    }
    if (!s->target) {
      if (s->header_got < sizeof(PieceHeader)) {
        long r = read_some(s->fd, reinterpret_cast<char*>(&s->header) + s->header_got, sizeof(PieceHeader) - s->header_got);
        if (r == 0) return moved;
        if (r < 0) {
          if (s->header_got > 0 || r == -2) {
            BRAID_NET_WARN("NIC %d: the peer's connection broke %s", s->nic, s->header_got ? "inside a message" : "");
            fail_comm(c, Result::RemoteError);
          }
          stream_dead(s);
          return moved;
        }
        moved = true;
        s->header_got += size_t(r);
        if (s->header_got < sizeof(PieceHeader)) continue;
        const PieceHeader& h = s->header;
        if (h.magic != kWireMagic || h.total < h.offset || h.total - h.offset < h.bytes) {
          BRAID_NET_WARN("NIC %d: a malformed piece header (magic %x, %lu bytes at %lu of %lu)", s->nic, h.magic,
                         (unsigned long)h.bytes, (unsigned long)h.offset, (unsigned long)h.total);
          fail_comm(c, Result::RemoteError);
          stream_dead(s);
          return moved;
        }
      }
      const PieceHeader& h = s->header;
      Request* req = nullptr;
      const char* refused = nullptr;
      bool truncated = false;
      {
        std::lock_guard<std::mutex> lock(c->mu);
        auto it = c->posted.find(h.seq);
        if (it != c->posted.end()) {
          req = it->second;
          const uint64_t total = req->total.load();
          if (h.total > req->capacity) truncated = true;
          else if (total != kNoTotal && total != h.total) refused = "its message size differs from an earlier piece's";
          else if (h.bytes == 0 && h.total != 0) refused = "an empty piece of a message that is not empty";
          else if (!claim_piece(req, h.offset, h.bytes)) refused = "it overlaps bytes of the message another piece brought";
          else req->total.store(h.total);
        } else if (h.seq < c->next_seq) {
          refused = "its message is complete already";  // posted, and taken off `posted` when done
        }
      }
      if (!req && !refused) {
        // The receiver has not posted this message yet: leave the bytes in TCP.
        s->parked_seq.store(h.seq);
        s->parked = true;
        return moved;
      }
      s->parked = false;
      if (truncated) {
        BRAID_NET_WARN("message %lu truncated: the peer sends %lu bytes, the receive has room for %zu",
                       (unsigned long)h.seq, (unsigned long)h.total, req->capacity);
        fail_comm(c, Result::InvalidUsage);
        stream_dead(s);
        return moved;
      }
      if (refused) {
        BRAID_NET_WARN("NIC %d: refused a piece of message %lu (%lu bytes at %lu of %lu): %s", s->nic,
                       (unsigned long)h.seq, (unsigned long)h.bytes, (unsigned long)h.offset, (unsigned long)h.total, refused);
        fail_comm(c, Result::RemoteError);
        stream_dead(s);
        return moved;
      }
      s->target = req;
      s->payload_got = 0;
    }
    const PieceHeader& h = s->header;
    if (s->payload_got < h.bytes) {
      // Announced before the error is looked at again (both sequentially consistent), so that
      // test() either sees this read and waits for it, or this read sees the failure and stops.
      c->buffer_readers.fetch_add(1);
      if (c->error.load()) {
        c->buffer_readers.fetch_sub(1);
        stream_dead(s);
        return moved;
      }
      long r = read_some(s->fd, s->target->data + h.offset + s->payload_got, h.bytes - s->payload_got);
      c->buffer_readers.fetch_sub(1);
      if (r == 0) return moved;
      if (r < 0) {
        BRAID_NET_WARN("NIC %d: the peer's connection broke inside a message", s->nic);
        fail_comm(c, Result::RemoteError);
        stream_dead(s);
        return moved;
      }
      moved = true;
      s->payload_got += size_t(r);
      if (s->payload_got < h.bytes) continue;
    }
    // The piece is in.
    Request* req = s->target;
    s->target = nullptr;
    s->header_got = 0;
    if (s->nic == c->direct) monitor->touch(c->direct, c->monitor_slot, now);
    // Once `received` reaches the total, test() may hand the request back and irecv reuse it
    // for a later message. The message leaves `posted` first, under the lock pieces claim bytes
    // under: a late piece of it can then never claim bytes of the message that reuses the request.
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (req->received.load() + h.bytes == h.total) c->posted.erase(h.seq);
      req->received.fetch_add(h.bytes);
    }
    moved = true;
  }
}

bool TcpTransport::State::progress_control(Stream* s, int64_t now) {
  Comm* c = s->comm;
  bool moved = false;
  // The sender reads credits. The receiver reads too, though the sender writes nothing: that is
  // how it sees the sender's end close (a killed sender whose streams all stopped between pieces
  // leaves no broken piece to tell it), and an unread end would keep poll waking the lane.
  for (;;) {
    long r = read_some(s->fd, reinterpret_cast<char*>(&s->credit_in) + s->credit_got, sizeof(Credit) - s->credit_got);
    if (r == 0) break;
    if (r < 0) {
      stream_dead(s);
      return moved;
    }
    moved = true;
    s->credit_got += size_t(r);
    if (s->credit_got == sizeof(Credit)) {
      s->credit_got = 0;
      if (c->is_send && s->credit_in.magic == kWireMagic) c->remote_idle.store(s->credit_in.idle_mask);
    }
  }
  if (c->is_send) return moved;
  // Receiver: tell the sender when our NICs' state changes.
  if (s->credit_put == sizeof(Credit)) {
    uint32_t mask = monitor->idle_mask_for(c->worker, c->direct, now);
    if (mask == s->credit_sent_mask) return moved;
    s->credit_out = {kWireMagic, mask};
    s->credit_sent_mask = mask;
    s->credit_put = 0;
  }
  ssize_t r = send(s->fd, reinterpret_cast<char*>(&s->credit_out) + s->credit_put, sizeof(Credit) - s->credit_put,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
  if (r > 0) {
    s->credit_put += size_t(r);
    moved = true;
  } else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    stream_dead(s);
  }
  return moved;
}

void TcpTransport::State::run(int lane) {
  NicThread& t = *threads[size_t(lane)];
  std::vector<pollfd> fds;
  while (!t.stop.load()) {
    int64_t wait_ns = 100000000;  // at most 100 ms asleep
    bool moved = false;
    bool has_receiver_control = false;
    fds.clear();
    fds.push_back({t.wake_fd, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(t.mu);
      int64_t now = now_ns();
      bool backlog = false;
      for (Stream* s : t.streams) backlog |= s->kind == StreamKind::Data && s->comm->is_send && s->queued_bytes.load() > 0;
      t.account(now, backlog);
      for (Stream* s : t.streams) {
        if (s->dead) continue;
        short events = 0;
        if (s->kind == StreamKind::Control) {
          moved |= progress_control(s, now);
          if (!s->comm->is_send) has_receiver_control = true;
          events = POLLIN;
          if (s->credit_put < sizeof(Credit)) events |= POLLOUT;
        } else if (s->comm->is_send) {
          moved |= progress_send(t, s, now, &wait_ns);
          if (s->queued_bytes.load() > 0 || s->front_sent > 0) {
            std::lock_guard<std::mutex> comm_lock(s->comm->mu);
            if (!s->queue.empty() && t.bucket.available(now) > 0) events = POLLOUT;
          }
        } else {
          moved |= progress_recv(s, now);
          if (!s->parked) events = POLLIN;
        }
        if (events) fds.push_back({s->fd, events, 0});
      }
    }
    if (moved) continue;
    if (has_receiver_control) wait_ns = std::min(wait_ns, std::max<int64_t>(monitor->idle_ns() / 4, 100000));
    // ppoll sleeps to the microsecond, so a rate-limited NIC wakes when its tokens are there.
    timespec ts{time_t(wait_ns / 1000000000), long(wait_ns % 1000000000)};
    ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      ssize_t r = read(t.wake_fd, &v, sizeof v);
      (void)r;
    }
  }
}

// The thread that tests a request moves its connection's bytes too, where the NIC's thread is
// not at it already: NCCL's proxy thread polls test() without pause, and on a machine short of
// cores its time is better spent on the sockets than on asking (NCCL's socket transport does its
// I/O in test() alone).
void TcpTransport::State::help(Comm* c) {
  int64_t now = now_ns();
  for (int n = 0; n < int(threads.size()); ++n) {
    NicThread& t = *threads[size_t(n)];
    bool mine = false;
    for (auto& s : c->streams) mine |= s->lane == n;
    if (!mine || !t.mu.try_lock()) continue;
    int64_t wait = 0;
    for (auto& s : c->streams) {
      if (s->lane != n || s->dead.load()) continue;
      if (c->is_send) progress_send(t, s.get(), now, &wait);
      else progress_recv(s.get(), now);
    }
    t.mu.unlock();
  }
}

void TcpTransport::State::attach(Comm* c) {
  std::vector<std::vector<Stream*>> by_lane(threads.size());
  for (auto& s : c->streams) by_lane[size_t(s->lane)].push_back(s.get());
  if (c->control) by_lane[size_t(c->control->lane)].push_back(c->control.get());
  for (int i = 0; i < int(threads.size()); ++i) {
    if (by_lane[size_t(i)].empty()) continue;
    {
      std::lock_guard<std::mutex> lock(threads[size_t(i)]->mu);
      threads[size_t(i)]->streams.insert(threads[size_t(i)]->streams.end(), by_lane[size_t(i)].begin(),
                                         by_lane[size_t(i)].end());
    }
    wake(i);
  }
}

void TcpTransport::State::detach(Comm* c) {
  for (auto& t : threads) {
    std::lock_guard<std::mutex> lock(t->mu);
    std::erase_if(t->streams, [c](Stream* s) { return s->comm == c; });
  }
}

Result TcpTransport::State::build_comm(bool is_send, int direct, int remote_nics, int control_fd,
                                       const std::vector<std::pair<int, int>>& data, Comm** out) {
  auto c = std::make_unique<Comm>();
  c->is_send = is_send;
  c->direct = direct;
  c->remote_nic_count = std::max(remote_nics, 1);
  c->worker = workers[size_t(direct)];
  c->damper = ChoiceDamper(opt.idle_ns, 8 * opt.idle_ns);
  c->monitor_slot = monitor->claim(direct, c->worker);
  c->control = std::make_unique<Stream>();
  c->control->fd = control_fd;
  c->control->nic = direct;
  // Each connection starts on the next lane, so that connections of one stream each (and NCCL's
  // several channels) spread over the lanes too.
  const int turn = lane_turn.fetch_add(1);
  c->control->lane = lane_of(direct, turn);
  c->control->kind = StreamKind::Control;
  c->control->comm = c.get();
  set_stream_options(control_fd);
  std::vector<int> on_nic(opt.nics.size(), 0);  // streams so far per NIC: they take its lanes in turn
  for (auto [fd, nic] : data) {
    auto s = std::make_unique<Stream>();
    s->fd = fd;
    s->nic = nic;
    s->lane = lane_of(nic, turn + on_nic[size_t(nic)]++);
    s->comm = c.get();
    set_stream_options(fd);
    c->streams.push_back(std::move(s));
  }
  std::stable_sort(c->streams.begin(), c->streams.end(), [](const auto& a, const auto& b) { return a->nic < b->nic; });
  *out = c.release();
  attach(*out);
  return Result::Success;
}

// --- the transport ------------------------------------------------------------------------------

Result make_tcp_transport(TcpOptions options, std::unique_ptr<TcpTransport>* out) {
  if (options.nics.empty()) return fail(Result::InvalidArgument, "TCP transport: no NIC");
  if (options.nics.size() > size_t(kMaxNics)) options.nics.resize(kMaxNics);
  options.streams_per_nic = std::clamp(options.streams_per_nic, 1, 16);
  options.threads_per_nic = std::clamp(options.threads_per_nic, 1, 8);
  auto st = std::make_unique<TcpTransport::State>();
  st->opt = options;
  for (size_t i = 0; i < options.nics.size(); ++i) st->workers.push_back(new_worker_id());
  st->monitor = options.monitor ? options.monitor
                                : std::make_shared<NicMonitor>(int(options.nics.size()), options.idle_ns);
  out->reset(new TcpTransport(std::move(st)));
  return Result::Success;
}

TcpTransport::TcpTransport(std::unique_ptr<State> state) : s_(std::move(state)) {
  for (size_t i = 0; i < s_->opt.nics.size() * size_t(s_->opt.threads_per_nic); ++i) {
    auto t = std::make_unique<NicThread>();
    t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    // A burst of 10 ms of traffic (at least 256 KB): wake-ups late by less than that (this
    // shared machine makes them late by milliseconds) lose nothing. An emulated NIC's rate is
    // split evenly over its lanes.
    double rate = s_->opt.rate_bytes_per_s / s_->opt.threads_per_nic;
    t->bucket = TokenBucket(rate, std::max(262144.0, rate * 10e-3));
    s_->threads.push_back(std::move(t));
  }
  for (size_t i = 0; i < s_->threads.size(); ++i) s_->threads[i]->thread = std::thread([this, i] { s_->run(int(i)); });
}

TcpTransport::~TcpTransport() {
  if (s_->relayed.load() || s_->relay_fallback.load())
    BRAID_NET_INFO("relays: %llu bytes sent through peer GPUs' pools, %llu meant for relays sent on the direct NIC",
                   (unsigned long long)s_->relayed.load(), (unsigned long long)s_->relay_fallback.load());
  for (auto& t : s_->threads) {
    t->stop.store(true);
    uint64_t one = 1;
    ssize_t r = write(t->wake_fd, &one, sizeof one);
    (void)r;
  }
  for (auto& t : s_->threads) {
    t->thread.join();
    ::close(t->wake_fd);
  }
  std::lock_guard<std::mutex> lock(s_->pending_mu);
  for (auto& [key, p] : s_->pending)
    if (p.fd >= 0) ::close(p.fd);
}

int TcpTransport::nic_count() const { return int(s_->opt.nics.size()); }
const Nic& TcpTransport::nic(int i) const { return s_->opt.nics.at(size_t(i)); }
NicMonitor& TcpTransport::monitor() { return *s_->monitor; }
void TcpTransport::offer_relay(int nic) { s_->offer_relay(nic); }
SharedRelayPool* TcpTransport::relay_pool(int nic) {
  if (nic < 0 || nic >= nic_count()) return nullptr;
  return s_->own_pool(nic);
}
uint64_t TcpTransport::relayed_bytes() const { return s_->relayed.load(); }
uint64_t TcpTransport::relay_fallback_bytes() const { return s_->relay_fallback.load(); }

Result TcpTransport::listen(int nic, void* handle, ListenComm** out) {
  if (nic < 0 || nic >= nic_count()) return fail(Result::InvalidArgument, "listen: device %d of %d", nic, nic_count());
  s_->offer_relay(nic);
  auto l = std::make_unique<ListenComm>();
  l->nic = nic;
  l->nonce = random64();
  ListenHandle h{};
  h.magic = kWireMagic;
  h.version = kWireVersion;
  h.nic = uint16_t(nic);
  h.nonce = l->nonce;
  Result r = listen_on(s_->opt.nics[nic], &l->control_fd, &h.control);
  for (int i = 0; r == Result::Success && i < nic_count(); ++i) {
    int fd = -1;
    WireAddress a{};
    r = listen_on(s_->opt.nics[i], &fd, &a);
    if (r == Result::Success) {
      l->data_fds.push_back(fd);
      l->data_addrs.push_back(a);
    }
  }
  if (r != Result::Success) {
    close_listen(l.release());
    return r;
  }
  std::memset(handle, 0, kNcclNetHandleMaxSize);
  std::memcpy(handle, &h, sizeof h);
  *out = l.release();
  return Result::Success;
}

Result TcpTransport::connect(int nic, void* handle, Comm** out) {
  *out = nullptr;
  if (nic < 0 || nic >= nic_count()) return fail(Result::InvalidArgument, "connect: device %d of %d", nic, nic_count());
  if (!handle) return fail(Result::InvalidArgument, "connect: no handle");
  ListenHandle h;
  std::memcpy(&h, handle, sizeof h);
  std::unique_lock<std::mutex> lock(s_->pending_mu);
  PendingConnect& p = s_->pending[handle];
  if (p.stage != 0 && std::memcmp(&p.handle, &h, sizeof h) != 0) {  // the memory holds a new handle
    if (p.fd >= 0) ::close(p.fd);
    p = PendingConnect{};
  }
  auto give_up = [&](Result r) {
    if (p.fd >= 0) ::close(p.fd);
    s_->pending.erase(handle);
    return r;
  };
  const Nic& local = s_->opt.nics[nic];
  const int timeout = s_->opt.setup_timeout_ms;
  if (p.stage == 0) {
    if (h.magic != kWireMagic || h.version != kWireVersion || !wire_address_valid(h.control) || h.nonce == 0)
      return give_up(fail(Result::InvalidArgument, "connect: the handle is not a braid net handle (magic %x, version %u)", h.magic, h.version));
    p.handle = h;
    s_->offer_relay(nic);
    Result r = start_connect(local, h.control, &p.fd);
    if (r != Result::Success) return give_up(r);
    p.connection = random64();
    p.deadline_ns = now_ns() + int64_t(timeout) * 1000000;
    p.stage = 1;
  }
  // The listener must take the connection and answer within the set-up time.
  auto waited_too_long = [&] {
    return give_up(fail(Result::RemoteError, "connect: the listener did not answer in %d ms", timeout));
  };
  if (p.stage == 1) {
    int st = connect_status(p.fd);
    if (st == 0) return now_ns() > p.deadline_ns ? waited_too_long() : Result::Success;
    if (st < 0) return give_up(fail(Result::RemoteError, "connect to the listener: %s", strerror(-st)));
    Hello hello{kWireMagic, WireKind::Hello, h.nonce, p.connection, uint32_t(nic_count()), uint32_t(s_->opt.streams_per_nic)};
    Result r = write_exact(p.fd, &hello, sizeof hello, timeout);
    if (r != Result::Success) return give_up(r);
    p.reply.resize(sizeof(Reply));
    p.stage = 2;
  }
  if (p.stage == 2) {
    // The listener answers once it accepts: wait for it without blocking.
    for (;;) {
      long r = read_some(p.fd, p.reply.data() + p.reply_got, p.reply.size() - p.reply_got);
      if (r == 0) return now_ns() > p.deadline_ns ? waited_too_long() : Result::Success;
      if (r < 0) return give_up(fail(Result::RemoteError, "connect: the listener closed the connection (refused?)"));
      p.reply_got += size_t(r);
      if (p.reply_got < p.reply.size()) continue;
      Reply rep;
      std::memcpy(&rep, p.reply.data(), sizeof rep);
      if (rep.magic != kWireMagic || rep.kind != WireKind::Reply || rep.nic_count == 0 || rep.nic_count > uint32_t(kMaxNics))
        return give_up(fail(Result::RemoteError, "connect: a malformed reply from the listener"));
      size_t want = sizeof(Reply) + rep.nic_count * sizeof(WireAddress);
      if (p.reply.size() == want) break;
      p.reply.resize(want);
    }
    p.stage = 3;
  }
  // Stage 3: the data streams. Connecting to a listening socket completes in the peer's kernel,
  // so waiting here never waits for the peer's code.
  Reply rep;
  std::memcpy(&rep, p.reply.data(), sizeof rep);
  std::vector<WireAddress> remote(rep.nic_count);
  std::memcpy(remote.data(), p.reply.data() + sizeof rep, rep.nic_count * sizeof(WireAddress));
  std::vector<std::pair<int, int>> data;
  auto close_data = [&] {
    for (auto [fd, n] : data) ::close(fd);
  };
  for (int i = 0; i < nic_count(); ++i) {
    const WireAddress& to = remote[size_t(i) % remote.size()];
    for (int k = 0; k < s_->opt.streams_per_nic; ++k) {
      int fd = -1;
      Result r = start_connect(s_->opt.nics[i], to, &fd);
      if (r == Result::Success) r = finish_connect(fd, timeout);
      StreamHello sh{kWireMagic, WireKind::StreamHello, h.nonce, p.connection, uint32_t(i), uint32_t(k)};
      if (r == Result::Success) r = write_exact(fd, &sh, sizeof sh, timeout);
      if (r != Result::Success) {
        if (fd >= 0) ::close(fd);
        close_data();
        return give_up(r);
      }
      data.push_back({fd, i});
    }
  }
  int control = p.fd;
  p.fd = -1;
  s_->pending.erase(handle);
  lock.unlock();
  return s_->build_comm(true, nic, int(rep.nic_count), control, data, out);
}

namespace {
constexpr size_t kMaxGreetings = 256;  // connections whose hello is being read, per listener

// Takes the connections waiting on `listen_fd`; each gets the set-up deadline.
void take_connections(ListenComm* l, int listen_fd, int nic, int64_t deadline_ns) {
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        BRAID_NET_WARN("accept: %s", strerror(errno));  // out of descriptors: the next call tries again
      return;
    }
    if (l->greeting.size() >= kMaxGreetings) {
      // Full: the oldest goes (a real peer sends its hello at once; a flood of silent ones must
      // not keep it out).
      BRAID_NET_WARN("accept: %zu connections are sending their hello; closed the oldest", l->greeting.size());
      ::close(l->greeting.front().fd);
      l->greeting.erase(l->greeting.begin());
    }
    Greeting g;
    g.fd = fd;
    g.nic = nic;
    g.deadline_ns = deadline_ns;
    l->greeting.push_back(g);
  }
}

// Whether a complete hello presents this listener's handle and sane counts.
bool hello_valid(const ListenComm* l, const Greeting& g) {
  if (g.nic < 0) {
    const Hello& h = g.msg.hello;
    return h.magic == kWireMagic && h.kind == WireKind::Hello && h.nonce == l->nonce && h.nic_count != 0 &&
           h.nic_count <= uint32_t(kMaxNics) && h.streams_per_nic != 0 && h.streams_per_nic <= 16;
  }
  const StreamHello& h = g.msg.stream;
  return h.magic == kWireMagic && h.kind == WireKind::StreamHello && h.nonce == l->nonce;
}

// Reads what each connection has sent of its hello; sorts out the complete ones (control ones
// wait their turn, data ones wait for their connection) and closes those that are malformed,
// closed, or past their deadline.
void read_greetings(ListenComm* l, int64_t now, int timeout_ms) {
  std::erase_if(l->greeting, [&](Greeting& g) {
    long r = read_some(g.fd, reinterpret_cast<char*>(&g.msg) + g.got, g.want() - g.got);
    if (r > 0) g.got += size_t(r);
    const char* kind = g.nic < 0 ? "connection" : "data connection";
    if (g.got == g.want()) {
      if (!hello_valid(l, g)) {
        BRAID_NET_WARN("accept: refused a %s that did not present this listener's handle", kind);
      } else if (g.nic < 0) {
        l->ready.push_back(g);
        return true;
      } else {
        l->early.insert({g.msg.stream.connection, EarlyStream{g.fd, g.nic, g.deadline_ns}});
        return true;
      }
    } else if (r < 0) {
      BRAID_NET_WARN("accept: a %s closed before its hello (%zu of %zu bytes)", kind, g.got, g.want());
    } else if (now > g.deadline_ns) {
      BRAID_NET_WARN("accept: closed a %s that sent %zu of %zu hello bytes in %d ms", kind, g.got, g.want(), timeout_ms);
    } else {
      return false;
    }
    ::close(g.fd);
    return true;
  });
  std::erase_if(l->ready, [&](const Greeting& g) {
    if (now <= g.deadline_ns) return false;
    BRAID_NET_WARN("accept: closed a connection whose turn did not come in %d ms", timeout_ms);
    ::close(g.fd);
    return true;
  });
  for (auto it = l->early.begin(); it != l->early.end();) {
    if (now <= it->second.deadline_ns) {
      ++it;
      continue;
    }
    BRAID_NET_WARN("accept: closed a data connection whose connection did not come in %d ms", timeout_ms);
    ::close(it->second.fd);
    it = l->early.erase(it);
  }
}

// Ends the connection being accepted, its streams closed.
void drop_current(ListenComm* l) {
  for (auto [fd, n] : l->accepted) ::close(fd);
  l->accepted.clear();
  if (l->current_fd >= 0) ::close(l->current_fd);
  l->current_fd = -1;
}
}  // namespace

Result TcpTransport::accept(ListenComm* l, Comm** out) {
  *out = nullptr;
  if (!l) return fail(Result::InvalidArgument, "accept: no listener");
  const int timeout = s_->opt.setup_timeout_ms;
  const int64_t now = now_ns();
  const int64_t deadline = now + int64_t(timeout) * 1000000;
  take_connections(l, l->control_fd, -1, deadline);
  for (size_t n = 0; n < l->data_fds.size(); ++n) take_connections(l, l->data_fds[n], int(n), deadline);
  read_greetings(l, now, timeout);
  // The next sender in turn gets the reply (a few hundred bytes: a fresh socket's buffer takes
  // them at once).
  while (l->current_fd < 0 && !l->ready.empty()) {
    Greeting g = l->ready.front();
    l->ready.pop_front();
    std::vector<uint8_t> reply(sizeof(Reply) + l->data_addrs.size() * sizeof(WireAddress));
    Reply rep{kWireMagic, WireKind::Reply, uint32_t(l->data_addrs.size()), 0};
    std::memcpy(reply.data(), &rep, sizeof rep);
    std::memcpy(reply.data() + sizeof rep, l->data_addrs.data(), l->data_addrs.size() * sizeof(WireAddress));
    if (write_exact(g.fd, reply.data(), reply.size(), 100) != Result::Success) {
      BRAID_NET_WARN("accept: a sender took no reply (%s); closed it", last_error());
      ::close(g.fd);
      continue;
    }
    l->current_fd = g.fd;
    l->hello = g.msg.hello;
    l->deadline_ns = g.deadline_ns;
  }
  if (l->current_fd < 0) return Result::Success;
  // The current connection's data streams, as their hellos come in. Never waits for them: the
  // peer's thread may be inside its own accept, and comes back to its connect only when we return.
  const size_t expected = size_t(l->hello.nic_count) * l->hello.streams_per_nic;
  auto [lo, hi] = l->early.equal_range(l->hello.connection);
  for (auto it = lo; it != hi && l->accepted.size() < expected;) {
    l->accepted.push_back({it->second.fd, it->second.nic});
    it = l->early.erase(it);
  }
  if (l->accepted.size() < expected) {
    if (now < l->deadline_ns) return Result::Success;
    size_t got = l->accepted.size();
    drop_current(l);
    return fail(Result::RemoteError, "accept: %zu of %zu data connections came in %d ms", got, expected, timeout);
  }
  int control = l->current_fd;
  l->current_fd = -1;
  auto data = std::move(l->accepted);
  l->accepted.clear();
  return s_->build_comm(false, l->nic, int(l->hello.nic_count), control, data, out);
}

Result TcpTransport::isend(Comm* c, const void* data, size_t bytes, Request** out) {
  *out = nullptr;
  if (!c || !c->is_send) return fail(Result::InvalidArgument, "isend: not a send connection");
  if (int e = c->error.load()) return fail(Result(e), "isend: the connection failed earlier");
  const TcpOptions& o = s_->opt;
  int64_t now = now_ns();
  ChoiceInput in;
  in.nic_count = nic_count();
  in.direct = c->direct;
  in.local_idle = s_->monitor->idle_mask_for(c->worker, c->direct, now);
  uint32_t remote = c->remote_idle.load();
  in.remote_idle = 0;
  for (int i = 0; i < in.nic_count; ++i)
    if (remote & (1u << (i % c->remote_nic_count))) in.remote_idle |= 1u << i;
  in.bytes = bytes;
  in.stripe_min_bytes = o.stripe_min_bytes;
  std::vector<Piece> pieces;
  std::vector<int> lanes;  // of the streams given pieces, to wake
  {
    std::lock_guard<std::mutex> lock(c->mu);
    in.rotate = c->rotate++;
    in.local_idle = c->damper.filter(in.local_idle & in.remote_idle, in.nic_count, now);
    Request* req = nullptr;
    for (auto& r : c->requests)
      if (!r.used.load()) { req = &r; break; }
    if (!req) return Result::Success;  // too many in flight: NCCL posts again later
    uint32_t mask = choose_nics(o.schedule, in);
    pieces = cut_message(mask, bytes, s_->paces(mask), o.streams_per_nic, o.min_piece_bytes);
    req->used.store(true);
    req->is_send = true;
    req->comm = c;
    req->data = static_cast<char*>(const_cast<void*>(data));
    req->capacity = bytes;
    req->seq = c->next_seq++;
    // Relays (D1): a piece on an indirect NIC whose owner GPU offers a pool goes, a slot at a
    // time, through that pool: copied into a slot (the peer copy) and sent from it on that NIC;
    // what finds no room goes on the direct NIC from the caller's buffer.
    std::vector<SendPiece> out_pieces;
    out_pieces.reserve(pieces.size());
    SharedRelayPool* mine = s_->own_pool(c->direct);
    auto emit = [&](int nic, size_t offset, size_t n, void* slot, SharedRelayPool* pool, CopyTicket ticket) {
      SendPiece sp{req, PieceHeader{kWireMagic, uint32_t(n), req->seq, bytes, offset}, slot ? static_cast<char*>(slot) : req->data + offset,
                   nic == c->direct, slot, pool, ticket, nullptr};
      if (sp.owner && mine) sp.own_pool = mine;
      sp.nic = nic;
      out_pieces.push_back(sp);
    };
    SharedRelayPool* full_pool = nullptr;
    for (const Piece& pc : pieces) {
      SharedRelayPool* pool = s_->relays_on() && pc.nic != c->direct && pc.bytes > 0 ? s_->relay_pool_for(pc.nic, now) : nullptr;
      if (!pool) {
        emit(pc.nic, pc.offset, pc.bytes, nullptr, nullptr, {});
        continue;
      }
      for (size_t off = pc.offset, end = pc.offset + pc.bytes; off < end;) {
        size_t n = std::min(pool->slot_bytes(), end - off);
        void* slot = pool == full_pool ? nullptr : pool->acquire();
        if (!slot) full_pool = pool;  // no room now: the rest of the message need not ask
        CopyTicket ticket;
        if (slot && s_->copier->start(slot, req->data + off, n, &ticket) != Result::Success) {
          BRAID_NET_WARN("relay copy into NIC %d's pool: %s; sending on the direct NIC", pc.nic, last_error());
          pool->release(slot);
          slot = nullptr;
        }
        if (slot) {
          emit(pc.nic, off, n, slot, pool, ticket);
          pool->count_relayed(n);
          c->stats.relayed_bytes += n;
          s_->relayed.fetch_add(n);
        } else {
          emit(c->direct, off, n, nullptr, nullptr, {});
          c->stats.relay_fallback_bytes += n;
          s_->relay_fallback.fetch_add(n);
        }
        off += n;
      }
    }
    req->pieces_left.store(int(out_pieces.size()));
    if (mask != c->stats.last_mask) {
      if (c->stats.last_mask != 0) c->stats.mask_changes++;
      c->stats.last_mask = mask;
      c->stats.last_change_ns = now;
    }
    for (const SendPiece& sp : out_pieces) {
      const int nic = sp.nic;
      // The NIC's stream with the fewest bytes queued.
      Stream* best = nullptr;
      for (auto& s : c->streams)
        if (s->nic == nic && (!best || s->queued_bytes.load() < best->queued_bytes.load())) best = s.get();
      if (sp.owner) s_->monitor->begin(c->direct, c->monitor_slot, now);
      if (sp.own_pool) sp.own_pool->add_owner_inflight(int64_t(sp.header.bytes));
      best->queued_bytes.fetch_add(sp.header.bytes);
      best->queue.push_back(sp);
      lanes.push_back(best->lane);
      c->stats.bytes_on_nic[nic] += sp.header.bytes;
    }
    *out = req;
  }
  std::vector<bool> woke(s_->threads.size(), false);
  for (int lane : lanes)
    if (!woke[size_t(lane)]) { woke[size_t(lane)] = true; s_->wake(lane); }
  return Result::Success;
}

Result TcpTransport::irecv(Comm* c, void* data, size_t bytes, Request** out) {
  *out = nullptr;
  if (!c || c->is_send) return fail(Result::InvalidArgument, "irecv: not a receive connection");
  if (int e = c->error.load()) return fail(Result(e), "irecv: the connection failed earlier");
  {
    std::lock_guard<std::mutex> lock(c->mu);
    Request* req = nullptr;
    for (auto& r : c->requests)
      if (!r.used.load()) { req = &r; break; }
    if (!req) return Result::Success;
    req->used.store(true);
    req->is_send = false;
    req->comm = c;
    req->data = static_cast<char*>(data);
    req->capacity = bytes;
    req->seq = c->next_seq++;
    req->total.store(kNoTotal);
    req->received.store(0);
    req->claimed.clear();
    c->posted[req->seq] = req;
    *out = req;
  }
  s_->wake_all(c);  // streams parked on this message go on
  return Result::Success;
}

Result TcpTransport::test(Request* req, bool* done, size_t* bytes) {
  *done = false;
  if (!req || !req->used.load()) return fail(Result::InvalidArgument, "test: not a request in flight");
  Comm* c = req->comm;
  auto finished = [&] {
    bool complete = req->is_send ? req->pieces_left.load() == 0 : req->received.load() == req->total.load();
    if (complete) {
      *done = true;
      if (bytes) *bytes = req->is_send ? req->capacity : size_t(req->total.load());
      req->used.store(false);
    }
    return complete;
  };
  if (finished()) return Result::Success;
  if (int e = c->error.load()) {
    // No thread writes into a receive buffer any more once the caller hears of the failure.
    while (c->buffer_readers.load() != 0) std::this_thread::yield();
    return fail(Result(e), "%s: the connection failed", req->is_send ? "send" : "receive");
  }
  s_->help(c);
  // A send to a peer that is gone fails on the socket (EPIPE, ECONNRESET) and sets the error
  // above; one whose bytes all went out before the peer closed has completed. A receive from a
  // peer that closed can still complete while some stream may hold its bytes: one that is open
  // and not parked on a later message (the peer may close right after its last send).
  if (!req->is_send && c->control->dead.load() && c->dead_streams.load() > 0) {
    bool hope = false;
    for (auto& s : c->streams)
      hope |= !s->dead.load() && (!s->parked.load() || s->parked_seq.load() <= req->seq);
    // A stream counts its last piece before it reads the end of the stream: once every stream
    // reads as closed, the count is final, and the message may have completed since the first look.
    if (!hope && !finished())
      return fail(Result::RemoteError, "receive: the peer closed the connection before the message completed");
  }
  return Result::Success;
}

Result TcpTransport::close(Comm* c) {
  if (!c) return Result::Success;
  s_->detach(c);
  // Pieces never sent (a failed peer, or a close with sends in flight) give back their slots.
  if (c->is_send)
    for (auto& s : c->streams) s_->drop_queue(s.get());
  if (c->stats.relayed_bytes || c->stats.relay_fallback_bytes)
    BRAID_NET_INFO("connection on NIC %d: %llu bytes relayed through peer GPUs' pools, %llu meant for relays sent on the direct NIC (no room)",
                   c->direct, (unsigned long long)c->stats.relayed_bytes, (unsigned long long)c->stats.relay_fallback_bytes);
  for (auto& s : c->streams) ::close(s->fd);
  if (c->control) ::close(c->control->fd);
  // Owner work still counted in flight on the direct NIC ends with the connection.
  s_->monitor->release(c->direct, c->monitor_slot);
  delete c;
  return Result::Success;
}

Result TcpTransport::close_listen(ListenComm* l) {
  if (!l) return Result::Success;
  if (l->control_fd >= 0) ::close(l->control_fd);
  for (int fd : l->data_fds) ::close(fd);
  for (const Greeting& g : l->greeting) ::close(g.fd);
  for (const Greeting& g : l->ready) ::close(g.fd);
  for (auto& [id, e] : l->early) ::close(e.fd);
  drop_current(l);
  delete l;
  return Result::Success;
}

int64_t TcpTransport::damper_hold_ns(Comm* c, int nic) {
  std::lock_guard<std::mutex> lock(c->mu);
  return c->damper.hold_ns(nic);
}

CommStats TcpTransport::stats(Comm* c) {
  std::lock_guard<std::mutex> lock(c->mu);
  CommStats st = c->stats;
  st.retired_streams = c->dead_streams.load();
  return st;
}

}  // namespace braid::net
