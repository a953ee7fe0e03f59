#include "node.h"

#include <openssl/sha.h>

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
  const std::string key = "\n" + std::string(field) + ":";
  const std::size_t at = ("\n" + std::string(info)).find(key);
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

Node::Node(Options options, SteadyClock::time_point deadline, bool tolerate_unreachable) : pool_(std::move(options)) {
  try {
    with_connection([](Connection&, SteadyClock::time_point) { return 0; }, Repeat::kSafe, deadline);
  } catch (const ConnectionError&) {
    if (!tolerate_unreachable) throw;
  }
}

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
  const std::string policy = info_field(info.text(), "maxmemory_policy");
  if (!policy.empty() && policy != "noeviction") {
    throw UsageError("redis: the maxmemory-policy of " + address() + " is " + policy +
                         ": it may evict live leases; dblock needs maxmemory-policy noeviction",
                     kServiceName);
  }
  if (info_field(info.text(), "role") == "slave") {
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

std::optional<Node::Sent> Node::send(const Script& script, std::vector<std::string> keys,
                                     std::vector<std::string> args, SteadyClock::time_point deadline) noexcept {
  try {
    Sent sent{nullptr, &script, std::move(keys), std::move(args)};
    bool fresh = false;
    sent.connection = pool_.borrow(deadline, fresh);
    ensure_checked(*sent.connection, deadline);
    const std::string key_count = std::to_string(sent.keys.size());
    const std::vector<std::string_view> views(sent.args.begin(), sent.args.end());
    sent.connection->send(evalsha_argv(script, key_count, sent.keys, views), deadline);
    return sent;
  } catch (const Broken&) {
    pool_.clear();  // a restart breaks every idle connection: the next call connects afresh
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<Reply> Node::receive(Sent& sent, SteadyClock::time_point deadline) noexcept {
  try {
    Reply reply = sent.connection->receive(deadline);
    if (reply.is_error() && error_code(reply) == "NOSCRIPT") {
      const std::vector<std::string_view> views(sent.args.begin(), sent.args.end());
      reply = eval_on(*sent.connection, *sent.script, sent.keys, views, deadline);
    }
    pool_.give_back(std::move(sent.connection));
    return reply;
  } catch (const Broken&) {
    pool_.clear();
  } catch (const Error&) {
  }
  sent.connection.reset();
  return std::nullopt;
}

}  // namespace dblock::redis
