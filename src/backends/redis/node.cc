#include "node.h"

#include <openssl/sha.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "scripts.h"

namespace dblock::redis {

namespace {

Script script(const char* name, std::string_view body) { return Script(name, std::string(scripts::kPrelude).append(body)); }

std::string sha1_hex(const std::string& text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// "key:value" lines of INFO; "" when absent.
std::string info_field(std::string_view info, std::string_view field) {
  const std::string key = std::string("\n").append(field).append(":");
  const std::size_t at = std::string("\n").append(info).find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size() - 1;
  const std::size_t end = info.find_first_of("\r\n", start);
  return std::string(info.substr(start, end - start));
}

std::vector<std::string_view> evalsha_argv(const Script& script, const std::string& key_count,
                                           const std::vector<std::string>& keys,
                                           const std::vector<std::string_view>& args) {
  std::vector<std::string_view> argv{"EVALSHA", script.sha, key_count};
  for (const auto& k : keys) argv.push_back(k);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

std::string owner_digest(const OwnerSecret& secret) { return sha1_hex(std::string(secret_bytes(secret))); }

Script::Script(const char* name_in, std::string text_in)
    : name(name_in), text(std::move(text_in)), sha(sha1_hex(text)) {}

ScriptSet::ScriptSet()
    : acquire(script("acquire", scripts::kAcquire)),
      acquire_all(script("acquire-all", scripts::kAcquireAll)),
      renew(script("renew", scripts::kRenew)),
      release(script("release", scripts::kRelease)),
      force_release(script("force-release", scripts::kForceRelease)),
      describe(script("describe", scripts::kDescribe)),
      position(script("position", scripts::kPosition)),
      leave(script("leave", scripts::kLeave)),
      confirm(script("confirm", scripts::kConfirm)),
      raise_fence(script("raise-fence", scripts::kRaiseFence)) {}

Node::Node(Options options, SteadyClock::time_point deadline) : options_(std::move(options)) {
  with_connection([](Connection&, SteadyClock::time_point) { return 0; }, Repeat::kSafe, deadline);
}

Node::Node(Options options) : options_(std::move(options)) {}

void Node::ensure_checked(Connection& c, SteadyClock::time_point deadline) {
  if (checked_.load()) return;
  std::lock_guard<std::mutex> lock(check_mutex_);
  if (checked_.load()) return;
  check_server(c, deadline);
  checked_.store(true);
}

std::string Node::address() const { return options().host + ":" + std::to_string(options().port); }

void Node::check_server(Connection& c, SteadyClock::time_point deadline) {
  const Reply info = check_reply(c.command({"INFO"}, deadline), "INFO");
  check_info(info.text());
}

void Node::check_info(std::string_view info) const {
  const std::string policy = info_field(info, "maxmemory_policy");
  if (!policy.empty() && policy != "noeviction") {
    throw UsageError("redis: the maxmemory-policy of " + address() + " is " + policy +
                         ": it may evict live leases; dblock needs maxmemory-policy noeviction",
                     kServiceName);
  }
  if (info_field(info, "role") == "slave") {
    throw UsageError("redis: " + address() + " is a replica; dblock needs a master (a replica's keys follow another server)",
                     kServiceName);
  }
}

Reply Node::eval_on(Connection& c, const Script& script, const std::vector<std::string>& keys,
                    const std::vector<std::string_view>& args, SteadyClock::time_point deadline) {
  const std::string key_count = std::to_string(keys.size());
  std::vector<std::string_view> argv = evalsha_argv(script, key_count, keys, args);
  Reply reply = c.command(argv, deadline);
  if (reply.is_error() && error_code(reply) == "NOSCRIPT") {  // a restart or SCRIPT FLUSH emptied the cache
    argv[0] = "EVAL";
    argv[1] = script.text;
    reply = c.command(argv, deadline);
  }
  return check_reply(std::move(reply), script.name);
}

Reply Node::eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string_view>& args,
                 Repeat repeat, std::optional<SteadyClock::time_point> deadline) {
  return with_connection(
      [&](Connection& c, SteadyClock::time_point by) { return eval_on(c, script, keys, args, by); }, repeat,
      deadline);
}

std::unique_ptr<Node::Exchange> Node::begin(const Script& script, std::vector<std::string> keys,
                                            std::vector<std::string> args, SteadyClock::time_point deadline) {
  return std::make_unique<Exchange>(*this, script, std::move(keys), std::move(args), deadline);
}

Node::Exchange::Exchange(Node& node, const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                         SteadyClock::time_point deadline)
    : node_(node), script_(script), keys_(std::move(keys)), args_(std::move(args)), deadline_(deadline) {
  try {
    if ((connection_ = node_.pool_.take()) != nullptr) {
      send_script(false);
      return;
    }
    connect_by_ = std::min(deadline_, SteadyClock::now() + node_.options().connect_timeout);
    dial_fd_ = start_connect(node_.options().host, node_.options().port);
  } catch (const Broken& broken) {
    fail(broken.message);
  }
}

Node::Exchange::~Exchange() {
  if (dial_fd_ >= 0) ::close(dial_fd_);
}

int Node::Exchange::fd() const {
  if (finished_) return -1;
  return dialing() ? dial_fd_ : connection_->fd();
}

void Node::Exchange::advance(short revents) {
  if (finished_ || revents == 0) return;
  try {
    if (dialing()) {
      if (const int error = connect_result(dial_fd_); error != 0) {
        fail("redis: cannot connect to " + node_.address() + ": " + std::strerror(error));
        return;
      }
      connected();
      return;
    }
    connection_->read_available();
    while (!finished_) {
      std::optional<Reply> reply = connection_->next_reply();
      if (!reply) break;
      on_reply(std::move(*reply));
    }
  } catch (const Broken& broken) {
    fail(broken.message);
  }
}

void Node::Exchange::expire(SteadyClock::time_point now) {
  if (finished_) return;
  if (now >= deadline_) {
    fail("redis: " + node_.address() + " did not answer by the call's deadline");
  } else if (dialing() && now >= connect_by_) {
    fail("redis: cannot connect to " + node_.address() + ": timed out");
  }
}

// The connect completed: the handshake a new connection needs, then the script, in one write.
void Node::Exchange::connected() {
  const int fd = std::exchange(dial_fd_, -1);
  connection_ = Connection::adopt(fd);
  const Options& o = node_.options();
  if (!o.password.empty()) {
    std::vector<std::string_view> auth{"AUTH"};
    if (!o.user.empty()) auth.push_back(o.user);
    auth.push_back(o.password);
    connection_->append(auth);
    awaiting_.push_back(Awaiting::kAuth);
  }
  const std::string db = std::to_string(o.database);
  if (o.database != 0) {
    connection_->append({"SELECT", db});
    awaiting_.push_back(Awaiting::kSelect);
  }
  if (!node_.checked()) {
    connection_->append({"INFO"});
    awaiting_.push_back(Awaiting::kInfo);
  }
  send_script(false);
}

void Node::Exchange::send_script(bool as_text) {
  const std::string key_count = std::to_string(keys_.size());
  const std::vector<std::string_view> views(args_.begin(), args_.end());
  std::vector<std::string_view> argv = evalsha_argv(script_, key_count, keys_, views);
  if (as_text) {
    argv[0] = "EVAL";
    argv[1] = script_.text;
  }
  connection_->append(argv);
  awaiting_.push_back(as_text ? Awaiting::kScriptText : Awaiting::kScript);
  connection_->flush(deadline_);
}

void Node::Exchange::on_reply(Reply reply) {
  if (awaiting_.empty()) {
    fail("redis: " + node_.address() + " sent a reply nobody asked for");
    return;
  }
  const Awaiting what = awaiting_.front();
  awaiting_.pop_front();
  switch (what) {
    case Awaiting::kAuth:
    case Awaiting::kSelect:
      if (reply.is_error()) fail("redis: " + node_.address() + ": " + std::string(reply.text()));
      return;
    case Awaiting::kInfo:
      try {
        if (reply.is_error()) throw UsageError(std::string(reply.text()), kServiceName);
        node_.check_info(reply.text());
        node_.checked_.store(true);
      } catch (const Error& e) {
        fail(e.what());
      }
      return;
    case Awaiting::kScript:
      if (reply.is_error() && error_code(reply) == "NOSCRIPT") {  // a restart or SCRIPT FLUSH emptied the cache
        send_script(true);
        return;
      }
      finish(std::move(reply));
      return;
    case Awaiting::kScriptText:
      finish(std::move(reply));
      return;
  }
}

void Node::Exchange::fail(std::string why) {
  if (finished_) return;
  failure_ = std::move(why);
  finished_ = true;
  reply_.reset();
  connection_.reset();
  node_.pool_.clear();  // a restart breaks every idle connection: the next call connects afresh
}

void Node::Exchange::finish(std::optional<Reply> reply) {
  finished_ = true;
  reply_ = std::move(reply);
  node_.pool_.put(std::move(connection_));
}

}  // namespace dblock::redis
