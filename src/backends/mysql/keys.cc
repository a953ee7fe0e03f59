#include "keys.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "dblock/mysql/mysql.h"

namespace dblock::mysql {

namespace {

std::size_t utf8_chars(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Between the database and the digest of every hashed key: a character no short key can hold there
// (lock names and database names refuse control characters), so that a short key such as
// "<database>:<40 hex digits>" never equals a hashed one.
constexpr char kHashedMark = '\x1f';

std::string hashed_key(std::string_view database, std::string_view input) {
  return utf8_cut(database, 22) + ":" + kHashedMark + sha1_hex(input);
}

}  // namespace

std::string utf8_cut(std::string_view s, std::size_t bytes) {
  if (s.size() <= bytes) return std::string(s);
  while (bytes > 0 && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) --bytes;
  return std::string(s.substr(0, bytes));
}

std::string sha1_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr) != 1 || length != 20) {
    throw std::runtime_error("mysql: SHA-1 (libcrypto) failed");
  }
  char out[41];
  for (unsigned int i = 0; i < length; ++i) std::snprintf(out + 2 * i, 3, "%02x", digest[i]);
  return std::string(out, 40);
}

std::string internal_key(std::string_view database, std::string_view prefix, std::string_view kind,
                         std::string_view name) {
  std::string input(database);
  for (std::string_view part : {std::string_view("dblock"), prefix, kind, name}) {
    input += '\0';
    input += part;
  }
  return hashed_key(database, input);
}

std::string lock_key(std::string_view database, std::string_view name) {
  std::string full = std::string(database) + ":" + std::string(name);
  if (utf8_chars(full) <= 64 && full.size() <= 192) return full;
  return hashed_key(database, full);
}

}  // namespace dblock::mysql
