// bench/raw_redis.h — the Redis floors' side of redis_bench: hiredis used directly, as
// hand-written application code does (one blocking redisContext per connection, TCP_NODELAY as
// hiredis sets it), and the common single-key lock (SET key token NX PX ttl, released by the
// standard compare-and-delete). Nothing here uses dblock beyond its URL parser.
//
// Header-only, one translation unit. Not thread-safe: one RawRedis per thread or process.
#ifndef DBLOCK_BENCH_RAW_REDIS_H_
#define DBLOCK_BENCH_RAW_REDIS_H_

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.h"
#include "dblock/url.h"

namespace dblock_bench {

// The standard compare-and-delete (redis.io's "distributed locks" page, redis-py's Lock, redsync).
constexpr const char* kCompareAndDelete =
    "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

// ---------------------------------------------------------------------------------------------
// Raw connections: the floor talks hiredis directly, like hand-written application code (one
// blocking redisContext, TCP_NODELAY as hiredis sets it, one command per round trip).

struct RawTarget {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user;
  std::string password;
  int database = 0;
};

// redis://[user:password@]host[:port][/db], read by dblock's own URL parser (percent-decoding,
// IPv6 hosts and its errors included).
inline RawTarget parse_url(const std::string& url) {
  const dblock::Url u = dblock::parse_url(url);
  if (u.scheme != "redis" || u.hosts.size() != 1) throw std::runtime_error("not a one-host redis:// URL: " + u.redacted());
  RawTarget t;
  t.host = u.hosts[0].host;
  if (u.hosts[0].port != 0) t.port = u.hosts[0].port;
  t.user = u.user;
  t.password = u.password;
  if (!u.path.empty()) t.database = std::stoi(u.path);
  return t;
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

class RawRedis {
 public:
  explicit RawRedis(const std::string& url) : target_(parse_url(url)) {
    const timeval connect_timeout{5, 0};
    c_ = redisConnectWithTimeout(target_.host.c_str(), target_.port, connect_timeout);
    if (c_ == nullptr) throw std::runtime_error("hiredis: cannot allocate a context");
    if (c_->err != 0) {
      const std::string message = c_->errstr;
      redisFree(c_);
      throw std::runtime_error(format("cannot connect to %s:%d: %s", target_.host.c_str(), target_.port,
                                      message.c_str()));
    }
    const timeval command_timeout{30, 0};  // BLPOP waits at most 10 s
    redisSetTimeout(c_, command_timeout);
    if (!target_.password.empty()) {
      if (target_.user.empty()) {
        check(command({"AUTH", target_.password}), "AUTH");
      } else {
        check(command({"AUTH", target_.user, target_.password}), "AUTH");
      }
    }
    if (target_.database != 0) check(command({"SELECT", std::to_string(target_.database)}), "SELECT");
  }
  ~RawRedis() { redisFree(c_); }
  RawRedis(const RawRedis&) = delete;
  RawRedis& operator=(const RawRedis&) = delete;

  const RawTarget& target() const { return target_; }

  // One command, one round trip. Throws when the exchange fails; an error reply is returned.
  ReplyPtr command(const std::vector<std::string_view>& args) {
    set_args(args);
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(c_, static_cast<int>(args.size()), argv_.data(), lens_.data()));
    if (reply == nullptr) throw std::runtime_error(format("redis: %s", c_->errstr));
    return ReplyPtr(reply);
  }

  // Writes one command into the output buffer without sending it (redisAppendCommandArgv); the
  // next reply() sends everything appended and reads the first reply.
  void append(const std::vector<std::string_view>& args) {
    set_args(args);
    if (redisAppendCommandArgv(c_, static_cast<int>(args.size()), argv_.data(), lens_.data()) != REDIS_OK) {
      throw std::runtime_error(format("redis: %s", c_->errstr));
    }
  }
  // Flushes what append() buffered; does not wait for a reply. Throws when the write fails.
  void flush() {
    int done = 0;
    while (done == 0) {
      if (redisBufferWrite(c_, &done) != REDIS_OK) throw std::runtime_error(format("redis: %s", c_->errstr));
    }
  }
  // The next reply (blocking). Throws when the exchange fails; an error reply is returned.
  ReplyPtr reply() {
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) throw std::runtime_error(format("redis: %s", c_->errstr));
    return ReplyPtr(static_cast<redisReply*>(r));
  }

  // The reply, or throws on an error reply.
  static ReplyPtr check(ReplyPtr r, const char* what) {
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(format("redis %s: %s", what, r->str));
    return r;
  }

  // A bulk or status reply as text ("" for nil).
  std::string text(const std::vector<std::string_view>& args) {
    ReplyPtr r = check(command(args), std::string(args.front()).c_str());
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) return std::string(r->str, r->len);
    return {};
  }

 private:
  void set_args(const std::vector<std::string_view>& args) {
    argv_.clear();
    lens_.clear();
    for (const auto& a : args) {
      argv_.push_back(a.data());
      lens_.push_back(a.size());
    }
  }

  RawTarget target_;
  redisContext* c_ = nullptr;
  std::vector<const char*> argv_;
  std::vector<std::size_t> lens_;
};

// "key:value" lines of INFO; "" when absent.
inline std::string info_field(const std::string& info, const std::string& field) {
  const std::string key = "\n" + field + ":";
  const std::string all = "\n" + info;
  const std::size_t at = all.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  const std::size_t end = all.find_first_of("\r\n", start);
  return all.substr(start, end - start);
}

// CONFIG GET name -> value; "unknown" when refused (an ACL) or absent.
inline std::string config_get(RawRedis& c, const char* name) {
  ReplyPtr r = c.command({"CONFIG", "GET", name});
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
    return std::string(r->element[1]->str, r->element[1]->len);
  }
  return "unknown";
}

// The server process's CPU time (used_cpu_user + used_cpu_sys of INFO cpu) in µs; NaN when absent.
// Everything the server does counts: commands, scripts, the network, other clients of a shared server.
inline double server_cpu_us(RawRedis& c) {
  const std::string info = c.text({"INFO", "cpu"});
  const std::string user = info_field(info, "used_cpu_user");
  const std::string sys = info_field(info, "used_cpu_sys");
  if (user.empty() || sys.empty()) return NAN;
  return (std::atof(user.c_str()) + std::atof(sys.c_str())) * 1e6;
}

// The same with a connection of its own (the hand-off figures fork: no connection may stay open).
inline double server_cpu_us(const std::string& url) {
  RawRedis c(url);
  return server_cpu_us(c);
}

// Deletes every key matching one of `patterns` (SCAN, so it never blocks the server).
inline void drop_keys(RawRedis& c, const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    std::string cursor = "0";
    do {
      ReplyPtr r = RawRedis::check(c.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}), "SCAN");
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) throw std::runtime_error("redis SCAN: unexpected reply");
      cursor.assign(r->element[0]->str, r->element[0]->len);
      const redisReply* keys = r->element[1];
      if (keys->elements > 0) {
        std::vector<std::string_view> del{"DEL"};
        for (std::size_t i = 0; i < keys->elements; ++i) del.emplace_back(keys->element[i]->str, keys->element[i]->len);
        RawRedis::check(c.command(del), "DEL");
      }
    } while (cursor != "0");
  }
}

// Tokens and secrets for the floor, from a counter: the floor does not pay for randomness. 32 hex
// digits, the length of the uuid4().hex token redis-py's Lock uses.
inline std::string counter_token(std::uint64_t a, std::uint64_t b) {
  return format("%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
}
inline std::string counter_secret(std::uint64_t a, std::uint64_t b) {
  std::string out(16, '\0');
  std::memcpy(out.data(), &a, 8);
  std::memcpy(out.data() + 8, &b, 8);
  return out;
}

// The floor's lock: SET key token NX PX ttl, released by EVALSHA of the compare-and-delete.
class RawLock {
 public:
  RawLock(RawRedis& c, std::chrono::milliseconds ttl)
      : c_(c), ttl_(std::to_string(ttl.count())), sha_(c.text({"SCRIPT", "LOAD", kCompareAndDelete})) {}

  bool acquire(const std::string& key, const std::string& token) {
    ReplyPtr r = RawRedis::check(c_.command({"SET", key, token, "NX", "PX", ttl_}), "SET");
    return r->type == REDIS_REPLY_STATUS;  // "OK"; nil when the key exists
  }
  bool release(const std::string& key, const std::string& token) {
    ReplyPtr r = RawRedis::check(c_.command({"EVALSHA", sha_, "1", key, token}), "EVALSHA");
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  }

 private:
  RawRedis& c_;
  std::string ttl_;
  std::string sha_;
};

// Redlock's floor: the single-key lock on several masters at once. acquire() writes SET NX PX to
// every node before it reads any reply (one round trip to the slowest node), release() the same
// with the compare-and-delete; `parallel` false sends to one node after another instead.
class RawQuorumLock {
 public:
  RawQuorumLock(std::vector<std::unique_ptr<RawRedis>>& nodes, std::chrono::milliseconds ttl, bool parallel)
      : nodes_(nodes), ttl_(std::to_string(ttl.count())), parallel_(parallel) {
    for (auto& n : nodes_) sha_ = n->text({"SCRIPT", "LOAD", kCompareAndDelete});
  }
  // How many nodes took the key / released it.
  std::size_t acquire(const std::string& key, const std::string& token) {
    return on_all({"SET", key, token, "NX", "PX", ttl_}, [](const redisReply* r) { return r->type == REDIS_REPLY_STATUS; });
  }
  std::size_t release(const std::string& key, const std::string& token) {
    return on_all({"EVALSHA", sha_, "1", key, token},
                  [](const redisReply* r) { return r->type == REDIS_REPLY_INTEGER && r->integer == 1; });
  }

 private:
  template <typename Ok>
  std::size_t on_all(const std::vector<std::string_view>& args, Ok ok) {
    std::size_t count = 0;
    if (parallel_) {
      for (auto& n : nodes_) {
        n->append(args);
        n->flush();
      }
      for (auto& n : nodes_) count += ok(RawRedis::check(n->reply(), args.front().data()).get()) ? 1 : 0;
    } else {
      for (auto& n : nodes_) count += ok(RawRedis::check(n->command(args), args.front().data()).get()) ? 1 : 0;
    }
    return count;
  }

  std::vector<std::unique_ptr<RawRedis>>& nodes_;
  std::string ttl_;
  std::string sha_;
  bool parallel_;
};

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_RAW_REDIS_H_
