// Replies from hiredis, owned and read without touching redisReply's fields at call sites.
// Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_REPLY_H_
#define DBLOCK_SRC_BACKENDS_REDIS_REPLY_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dblock::redis {

// A read-only view of one reply (or one element of an array reply). Valid while its Reply lives.
class ReplyView {
 public:
  explicit ReplyView(const redisReply* reply) : reply_(reply) {}

  bool is_error() const { return reply_->type == REDIS_REPLY_ERROR; }
  bool is_nil() const { return reply_->type == REDIS_REPLY_NIL; }
  bool is_array() const { return reply_->type == REDIS_REPLY_ARRAY; }
  bool is_integer() const { return reply_->type == REDIS_REPLY_INTEGER; }
  // The text of a string, status or error reply ("" for other types).
  std::string_view text() const {
    const bool has_text = reply_->type == REDIS_REPLY_STRING || reply_->type == REDIS_REPLY_STATUS ||
                          reply_->type == REDIS_REPLY_ERROR;
    return has_text ? std::string_view(reply_->str, reply_->len) : std::string_view{};
  }
  // An integer reply, or a string reply holding a decimal integer; `fallback` otherwise.
  std::int64_t integer(std::int64_t fallback = 0) const;
  std::size_t size() const { return reply_->type == REDIS_REPLY_ARRAY ? reply_->elements : 0; }
  ReplyView operator[](std::size_t i) const { return ReplyView(reply_->element[i]); }

 private:
  const redisReply* reply_;
};

// Owns one reply; reads as its view.
class Reply : public ReplyView {
 public:
  explicit Reply(redisReply* reply) : ReplyView(reply), owned_(reply, &freeReplyObject) {}

 private:
  std::unique_ptr<redisReply, void (*)(void*)> owned_;
};

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_REPLY_H_
