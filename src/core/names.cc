// Validation of lock names, table prefixes and SQL identifiers.
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <random>
#include <string>

#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "internal.h"

namespace dblock {

namespace {

// Returns the length of the UTF-8 sequence starting at s[i], or 0 when it is malformed
// (overlong forms, surrogates and code points above U+10FFFF are rejected).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

namespace {

std::string hex_byte(char byte) {
  const auto c = static_cast<unsigned char>(byte);
  return {"0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
}

// The rule for text that is stored and shown (lock names, holders): 1-255 bytes of UTF-8 without
// control characters (C0, DEL, C1). `what` names it in the error.
void validate_text(const char* what, std::string_view text) {
  if (text.empty()) throw UsageError(std::string(what) + " is empty");
  if (text.size() > kMaxNameBytes) {
    throw UsageError(std::string(what) + " is " + std::to_string(text.size()) + " bytes; the limit is " +
                     std::to_string(kMaxNameBytes));
  }
  for (std::size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      throw UsageError(std::string(what) + " contains control character 0x" + hex_byte(text[i]) + " at byte " +
                       std::to_string(i));
    }
    std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) throw UsageError(std::string(what) + " is not valid UTF-8 (byte " + std::to_string(i) + ")");
    // U+0080..U+009F (C1 controls) are encoded 0xC2 0x80..0x9F.
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      throw UsageError(std::string(what) + " contains control character U+00" + hex_byte(text[i + 1]) + " at byte " +
                       std::to_string(i));
    }
    i += n;
  }
}

}  // namespace

void validate_lock_name(std::string_view name) { validate_text("lock name", name); }

namespace detail {

void unsupported(const LeaseService& service, const std::string& what) {
  const std::string name(service.name());
  throw UnsupportedError(what + " is not supported by the " + name + " backend", name);
}

void validate_holder(std::string_view holder) { validate_text("holder", holder); }

std::string default_holder() {
  static std::atomic<int> instance{0};
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  for (char& c : host) {  // a host name is any bytes to the kernel: keep the holder valid text
    if (c != '\0' && (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F)) c = '?';
  }
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + std::to_string(++instance);
}

}  // namespace detail
}  // namespace dblock
