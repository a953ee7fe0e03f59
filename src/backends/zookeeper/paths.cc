#include "paths.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "dblock/errors.h"

namespace dblock::zookeeper {

namespace {

constexpr std::string_view kWrite = "__WRIT__";
constexpr std::string_view kRead = "__READ__";
constexpr std::string_view kMutex = "lock-";

// N of a permit's child name "...-p<N>-__READ__<sequence>", else 0.
int permits_of(std::string_view name) {
  const std::size_t at = name.rfind(kRead);
  if (at == std::string_view::npos || at < 4 || name[at - 1] != '-') return 0;
  std::size_t p = at - 1;
  while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9') --p;
  if (p == at - 1 || p < 2 || name[p - 1] != 'p' || name[p - 2] != '-' || at - 1 - p > 5) return 0;
  return std::stoi(std::string(name.substr(p, at - 1 - p)));
}

[[noreturn]] void bad_path(std::string_view option, const std::string& why) {
  throw UsageError("zookeeper: " + std::string(option) + " " + why, kServiceName);
}

// ZooKeeper's PathUtils: no C0, DEL, C1, U+D800-U+F8FF or U+FFF0-U+FFFF (the last two as UTF-8).
bool forbidden_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x20 || b == 0x7F) return true;
  const auto next = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  if (b == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) return true;         // C1
  if (b == 0xED && next(1) >= 0xA0) return true;                           // surrogates
  if (b == 0xEE || (b == 0xEF && next(1) <= 0xA3)) return true;            // U+E000-U+F8FF
  if (b == 0xEF && next(1) == 0xBF && next(2) >= 0xB0) return true;        // U+FFF0-U+FFFF
  if (b >= 0xF0) return true;                                              // above U+FFFF: surrogates in Java
  return false;
}

// The UTF-8 bytes of code points escape_name() encodes: U+E000-U+F8FF, U+FFF0-U+FFFF, and every
// code point above U+FFFF (Java, which checks paths on the server, sees those as surrogates).
std::size_t encoded_run(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b >= 0xF0) return 4;
  const auto next = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  if (b == 0xEE || (b == 0xEF && next(1) <= 0xA3)) return 3;
  if (b == 0xEF && next(1) == 0xBF && next(2) >= 0xB0) return 3;
  return 0;
}

void percent(std::string& out, unsigned char b) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '%';
  out += kHex[b >> 4];
  out += kHex[b & 15];
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string sort_key(Layout layout, const std::string& name) {
  std::string key = name;
  const auto strip = [&](std::string_view lock) {
    const std::size_t at = key.rfind(lock);
    if (at != std::string::npos) key = key.substr(at + lock.size());
  };
  if (layout == Layout::kReadWrite) {
    strip(kRead);
    strip(kWrite);
  } else {
    strip(kMutex);
  }
  return key;
}

std::uint32_t sequence_of(const std::string& name) {
  if (name.size() < 10) return 0;
  std::uint64_t value = 0;
  for (std::size_t i = name.size() - 10; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    value = value * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace

void validate_path(std::string_view path, std::string_view option) {
  if (path.empty() || path[0] != '/') bad_path(option, "must be an absolute path (\"/a/b\")");
  if (path.size() > 1 && path.back() == '/') bad_path(option, "must not end with '/'");
  std::size_t start = 1;
  while (start <= path.size() && path.size() > 1) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty()) bad_path(option, "has an empty segment (\"//\")");
    if (segment == "." || segment == "..") bad_path(option, "has a \".\" or \"..\" segment");
    start = end + 1;
  }
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (forbidden_at(path, i)) bad_path(option, "contains a character ZooKeeper does not allow in a path");
  }
}

std::string base_path(const Options& options, const std::string& table_prefix) {
  if (!options.base.empty()) return options.base;
  return "/dblock/" + (table_prefix == "dblock_" ? std::string() : table_prefix) + "locks";
}

std::string escape_name(std::string_view name) {
  if (name == ".") return "%2E";
  if (name == "..") return "%2E%2E";
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const auto b = static_cast<unsigned char>(name[i]);
    if (const std::size_t run = encoded_run(name, i); run > 0) {
      for (std::size_t k = 0; k < run && i < name.size(); ++k) percent(out, static_cast<unsigned char>(name[i++]));
      continue;
    }
    if (b == '%' || b == '/') {
      percent(out, b);
    } else {
      out += name[i];
    }
    ++i;
  }
  return out;
}

std::optional<std::string> unescape_name(std::string_view segment) {
  std::string out;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    if (i + 2 >= segment.size()) return std::nullopt;
    const int hi = hex_value(segment[i + 1]), lo = hex_value(segment[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (escape_name(out) != segment) return std::nullopt;  // not how dblock writes that name
  return out;
}

std::string guid_of(const OwnerSecret& secret) {
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  std::array<unsigned char, 32> digest{};
  unsigned int length = 0;
  if (algorithm == nullptr ||
      EVP_Digest(secret.bytes.data(), secret.bytes.size(), digest.data(), &length, algorithm, nullptr) != 1) {
    throw Error("zookeeper: computing the owner secret's digest failed (OpenSSL SHA-256)", kServiceName);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string_view lock_name(Layout layout, LockMode mode) {
  if (layout == Layout::kCuratorMutex) return kMutex;
  return mode == LockMode::kShared ? kRead : kWrite;
}

std::string node_prefix(const std::string& guid, Layout layout, LockMode mode, int permits) {
  const std::string marker = permits > 0 ? "p" + std::to_string(permits) + "-" : "";
  return "_c_" + guid + "-" + marker + std::string(lock_name(layout, mode));
}

std::string node_name(const std::string& guid, Layout layout, LockMode mode, std::uint32_t sequence, int permits) {
  std::string digits = std::to_string(sequence);
  digits.insert(0, 10 - std::min<std::size_t>(10, digits.size()), '0');
  return node_prefix(guid, layout, mode, permits) + digits;
}

bool has_window(const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), kWindowNode) != names.end();
}

std::vector<Child> sorted_children(Layout layout, std::vector<std::string> names) {
  std::vector<Child> out;
  out.reserve(names.size());
  for (std::string& name : names) {
    if (name == kWindowNode) continue;
    Child c;
    c.sort_key = sort_key(layout, name);
    c.reader = layout == Layout::kReadWrite && name.find(kRead) != std::string::npos;
    c.writer = layout == Layout::kReadWrite ? name.find(kWrite) != std::string::npos : true;
    if (c.reader) c.permits = permits_of(name);
    c.sequence = sequence_of(name);
    c.name = std::move(name);
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const Child& a, const Child& b) { return a.sort_key < b.sort_key; });
  return out;
}

bool holds(const std::vector<Child>& children, std::size_t index) {
  if (index >= children.size()) return false;
  if (!children[index].reader) return index == 0;
  int readers = 0;
  for (std::size_t i = 0; i < index; ++i) {
    if (children[i].writer) return false;
    if (children[i].reader) ++readers;
  }
  return children[index].permits == 0 || readers < children[index].permits;
}

std::optional<int> permits_conflict(const std::vector<Child>& sorted, std::size_t index) {
  if (index >= sorted.size() || !sorted[index].reader) return std::nullopt;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i != index && sorted[i].reader && sorted[i].permits != sorted[index].permits && holds(sorted, i)) {
      return sorted[i].permits;
    }
  }
  return std::nullopt;
}

std::vector<std::size_t> permit_holders_ahead(const std::vector<Child>& sorted, std::size_t index) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < index && i < sorted.size(); ++i) {
    if (sorted[i].reader && holds(sorted, i)) out.push_back(i);
  }
  return out;
}

namespace {
constexpr std::string_view kDataTag = "dblock:";
}  // namespace

std::string node_data(std::string_view holder) { return std::string(kDataTag) + std::string(holder); }

std::optional<std::string> holder_in(std::string_view data) {
  if (data.substr(0, kDataTag.size()) != kDataTag) return std::nullopt;
  return std::string(data.substr(kDataTag.size()));
}

std::string shown_holder(std::string_view data, std::string_view child) {
  if (auto holder = holder_in(data)) return *holder;
  std::string out = "foreign " + std::string(child);
  if (!data.empty()) out += " (" + std::string(data) + ")";
  return out;
}

Layout other_layout(Layout layout) {
  return layout == Layout::kReadWrite ? Layout::kCuratorMutex : Layout::kReadWrite;
}

bool other_recipe(Layout layout, std::string_view name) {
  const auto ends_with_sequence = [&](std::string_view lock) {
    const std::size_t at = name.rfind(lock);
    if (at == std::string_view::npos || name.size() != at + lock.size() + 10) return false;
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + lock.size()), name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  if (layout == Layout::kReadWrite) return ends_with_sequence(kMutex);
  return ends_with_sequence(kRead) || ends_with_sequence(kWrite);
}

std::optional<std::string> other_recipe_child(Layout layout, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (other_recipe(layout, name)) return name;
  }
  return std::nullopt;
}

UsageError recipe_mismatch(Layout layout, std::string_view name, std::string_view child) {
  const bool rw = layout == Layout::kReadWrite;
  return UsageError("zookeeper: '" + std::string(name) + "' has a node of Curator's " +
                        (rw ? "InterProcessMutex" : "InterProcessReadWriteLock") + " (" + std::string(child) +
                        "), whose holders and layout=" + (rw ? "rw" : "curator-mutex") +
                        "'s do not exclude each other; not taken. Open the lock with layout=" +
                        (rw ? "curator-mutex" : "rw") + " (as that recipe's other users do)",
                    kServiceName);
}

std::optional<std::size_t> awaited(const std::vector<Child>& sorted, std::size_t index) {
  if (index == 0 || index >= sorted.size()) return std::nullopt;
  if (!sorted[index].reader) return index - 1;
  for (std::size_t i = index; i-- > 0;) {
    if (sorted[i].writer) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> index_of(const std::vector<Child>& sorted, const std::string& name) {
  const auto at = std::find_if(sorted.begin(), sorted.end(), [&](const Child& c) { return c.name == name; });
  if (at == sorted.end()) return std::nullopt;
  return static_cast<std::size_t>(at - sorted.begin());
}

}  // namespace dblock::zookeeper
