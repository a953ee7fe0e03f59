#include "error_map.h"

#include "dblock/errors.h"

namespace dblock::redis {

std::string_view error_code(const ReplyView& reply) {
  const std::string_view text = reply.text();
  return text.substr(0, text.find(' '));
}

namespace {

// An error raised inside a script ends in " script: <sha>, on @user_script:<line>." (Redis 7):
// noise for dblock's own refusals and permission errors.
std::string_view without_script_tail(std::string_view text) {
  const std::size_t at = text.rfind(" script: ");
  return at == std::string_view::npos ? text : text.substr(0, at);
}

// Redis 7 answers a command a script may not run (or a key, a channel it may not use) with
// "ERR The user executing the script can't ..."; a command sent itself with "NOPERM ...".
bool acl_refusal(std::string_view code, std::string_view text) {
  return code == "NOPERM" || (code == "ERR" && text.find("The user executing the script can't") != std::string_view::npos);
}

}  // namespace

const ReplyView& check_reply(const ReplyView& reply, const std::string& what) {
  if (!reply.is_error()) return reply;
  const std::string_view code = error_code(reply);
  // Lua errors raised with redis.error_reply keep their code; a script's own runtime error reads
  // "ERR user_script:..." and is a bug, reported whole.
  const bool ours = code == "DBLOCK" || acl_refusal(code, reply.text());
  const std::string_view text = ours ? without_script_tail(reply.text()) : reply.text();
  const std::string message = "redis: " + what + ": " + std::string(text.substr(0, ours ? 600 : 300));
  if (code == "NOAUTH" || code == "WRONGPASS") throw ConnectionError(message, kServiceName, std::string(code));
  if (acl_refusal(code, reply.text())) {
    throw PermissionError(message + " (the ACL user lacks a command, key or channel dblock uses: README's Redis "
                                    "section has the ACL line)",
                          kServiceName, "NOPERM");
  }
  // OOM: maxmemory reached under noeviction; writes fail until memory is freed, which may pass.
  if (code == "LOADING" || code == "BUSY" || code == "TRYAGAIN" || code == "OOM") {
    throw ConnectionError(message, kServiceName, std::string(code), true);
  }
  if (code == "READONLY" || code == "MASTERDOWN") {
    throw UsageError(message + " (dblock needs a master, not a replica)", kServiceName, std::string(code));
  }
  if (code == "DBLOCK") throw UsageError(message, kServiceName, std::string(code));
  throw Error(message, kServiceName, std::string(code));
}

std::int64_t ReplyView::integer(std::int64_t fallback) const {
  if (reply_->type == REDIS_REPLY_INTEGER) return reply_->integer;
  if (reply_->type != REDIS_REPLY_STRING || reply_->len == 0) return fallback;
  try {
    std::size_t used = 0;
    const std::string s(reply_->str, reply_->len);
    const long long v = std::stoll(s, &used);
    return used == s.size() ? v : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace dblock::redis
