#include "error_map.h"

#include "dblock/errors.h"

namespace dblock::redis {

std::string_view error_code(const ReplyView& reply) {
  const std::string_view text = reply.text();
  return text.substr(0, text.find(' '));
}

const ReplyView& check_reply(const ReplyView& reply, const std::string& what) {
  if (!reply.is_error()) return reply;
  const std::string_view code = error_code(reply);
  // Lua errors raised with redis.error_reply keep their code; a script's own runtime error reads
  // "ERR user_script:..." and is a bug, reported whole.
  const std::string message = "redis: " + what + ": " + std::string(reply.text().substr(0, 300));
  if (code == "NOAUTH" || code == "WRONGPASS") throw ConnectionError(message, kServiceName, std::string(code));
  if (code == "NOPERM") throw PermissionError(message, kServiceName, std::string(code));
  if (code == "LOADING" || code == "BUSY" || code == "TRYAGAIN") {
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
