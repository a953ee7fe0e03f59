// Replies from hiredis, owned and read without touching redisReply's fields at call sites.
// Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_REPLY_H_
#define DBLOCK_SRC_BACKENDS_REDIS_REPLY_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The fixed shapes of Redis commands' own replies, read by name.

// SCAN: the cursor of the next call ("0": done) and this page's keys.
struct ScanPage {
  std::string_view cursor;
  std::vector<std::string_view> keys;

  static ScanPage read(const ReplyView& reply) {
    ScanPage page;
    if (reply.size() < 2) return page;
    page.cursor = reply[0].text();
    const ReplyView keys = reply[1];
    for (std::size_t i = 0; i < keys.size(); ++i) page.keys.push_back(keys[i].text());
    return page;
  }
};

// One stream entry of XRANGE/XREVRANGE: its id and its fields (name, value, name, value, ...);
// `fields` is nullopt for an entry of another shape.
struct StreamEntry {
  std::string_view id;
  std::optional<ReplyView> fields;

  static StreamEntry read(const ReplyView& entry) {
    StreamEntry out;
    if (entry.size() > 0) out.id = entry[0].text();
    if (entry.size() >= 2 && entry[1].is_array()) out.fields = entry[1];
    return out;
  }
};

// A pushed message on a subscribed connection: its kind ("message", "subscribe", ...), channel
// and payload ("" where the kind has none).
struct PushMessage {
  std::string_view kind;
  std::string_view channel;
  std::string_view payload;

  static PushMessage read(const ReplyView& reply) {
    PushMessage out;
    if (reply.size() >= 1) out.kind = reply[0].text();
    if (reply.size() >= 2) out.channel = reply[1].text();
    if (reply.size() >= 3) out.payload = reply[2].text();
    return out;
  }
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
