// Checks made directly on a test server, beside dblock: a plain hiredis connection and the digest
// the Redis scripts store for a secret. Test-only.
#ifndef DBLOCK_TESTS_REDIS_RAW_REDIS_H_
#define DBLOCK_TESTS_REDIS_RAW_REDIS_H_

#include <catch2/catch.hpp>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <memory>
#include <string>
#include <vector>

#include "dblock/dblock.h"

namespace dblock::testing {

class Raw {
 public:
  explicit Raw(const Url::Host& node) {
    c_ = redisConnect(node.host.c_str(), node.port);
    REQUIRE(c_ != nullptr);
    REQUIRE(c_->err == 0);
  }
  explicit Raw(const std::string& url) : Raw(parse_url(url).hosts.at(0)) {}
  ~Raw() { redisFree(c_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  // The reply to `args` as text (strings, status, errors; integers in decimal; nil as "").
  std::string text(const std::vector<std::string>& args) {
    const Owned r = command(args);
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    if (r->type == REDIS_REPLY_NIL) return "";
    return std::string(r->str ? r->str : "", r->len);
  }
  // The elements of an array reply, as text.
  std::vector<std::string> list(const std::vector<std::string>& args) {
    const Owned r = command(args);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < r->elements; ++i) {
      out.emplace_back(r->element[i]->str ? r->element[i]->str : "", r->element[i]->len);
    }
    return out;
  }

 private:
  using Owned = std::unique_ptr<redisReply, void (*)(void*)>;
  Owned command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    REQUIRE(r != nullptr);
    return Owned(r, &freeReplyObject);
  }
  redisContext* c_;
};

// What the scripts store for `secret`: the lowercase hex SHA-1 of its 16 bytes.
inline std::string sha1_hex(const OwnerSecret& secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(secret.bytes.data(), secret.bytes.size(), digest, &length, EVP_sha1(), nullptr) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_REDIS_RAW_REDIS_H_
