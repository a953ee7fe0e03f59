// What SQLite's tables store for an owner secret: its digest, the first 128 bits of SHA-256 of its
// 16 bytes (the same digest the server computes on PostgreSQL and MariaDB). Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_OWNER_DIGEST_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_OWNER_DIGEST_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace dblock::sqlite {

using OwnerDigest = std::array<std::uint8_t, 16>;
using Sha256 = std::array<std::uint8_t, 32>;

// SHA-256 of `size` bytes at `data` into `out`; false if OpenSSL refused.
bool sha256(const void* data, std::size_t size, Sha256& out);

// Throws Error if the digest cannot be computed (OpenSSL refused).
OwnerDigest owner_digest(const std::uint8_t* secret, std::size_t size);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_OWNER_DIGEST_H_
