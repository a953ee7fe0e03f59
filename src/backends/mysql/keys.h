// GET_LOCK keys: of application locks (lock_key, public in dblock/mysql/mysql.h) and of dblock's
// own locks (beacons, the migration lock). Internal.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_KEYS_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_KEYS_H_

#include <string>
#include <string_view>

namespace dblock::mysql {

// 40 lowercase hex digits of SHA-1(data) (libcrypto). For key shortening only, not security.
std::string sha1_hex(std::string_view data);

// The longest prefix of `s` of at most `bytes` bytes that does not split a UTF-8 sequence.
std::string utf8_cut(std::string_view s, std::size_t bytes);

// GET_LOCK keys of dblock's own locks: "<database, cut to 22 bytes>:\x1f<SHA-1 hex>", hashed over
// input that contains NUL bytes, which no lock name can. They never coincide with lock_key() of a
// name: its short form holds no control character, and its hashed form digests other input.
std::string internal_key(std::string_view database, std::string_view prefix, std::string_view kind,
                         std::string_view name);

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_KEYS_H_
