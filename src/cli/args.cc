#include "args.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace dblock::cli {

std::optional<long long> parse_integer(std::string_view text) {
  const std::string_view digits = text.substr(!text.empty() && text[0] == '-' ? 1 : 0);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  long long value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return digits.size() < text.size() ? -value : value;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::chrono::milliseconds> {
    if (error != nullptr) {
      *error = "invalid duration '" + std::string(text) + "': " + why;
    }
    return std::nullopt;
  };
  if (text.empty()) {
    return fail("empty (use e.g. 500ms, 30s, 5m, 1h)");
  }
  std::size_t i = 0;
  std::uint64_t number = 0;
  constexpr std::uint64_t kLimit = static_cast<std::uint64_t>(kMaxDuration.count());
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    number = number * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (number > kLimit) {
      return fail("too large");
    }
    ++i;
  }
  if (i == 0) {
    return fail("expected a non-negative whole number with a unit ms, s, m or h (e.g. 500ms, 30s, 5m)");
  }
  std::string_view unit = text.substr(i);
  std::uint64_t factor = 0;
  if (unit == "ms") {
    factor = 1;
  } else if (unit.empty() || unit == "s") {
    factor = 1'000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else {
    return fail("unknown unit '" + std::string(unit) + "' (use ms, s, m or h)");
  }
  if (number > kLimit / factor) {
    return fail("too large");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(number * factor));
}

std::string format_duration(std::chrono::milliseconds value) {
  std::int64_t ms = value.count() < 0 ? 0 : value.count();
  char buf[64];
  if (ms < 1'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 "ms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 ".%" PRId64 "s", ms / 1'000, (ms % 1'000) / 100);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 "m%02" PRId64 "s", ms / 60'000, (ms % 60'000) / 1'000);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64 "h%02" PRId64 "m", ms / 3'600'000, (ms % 3'600'000) / 60'000);
  }
  return buf;
}

std::vector<std::string> ArgCursor::rest() {
  std::vector<std::string> out(args_.begin() + static_cast<std::ptrdiff_t>(pos_), args_.end());
  pos_ = args_.size();
  return out;
}

bool ArgCursor::option(std::string_view name, std::optional<std::string>* value) {
  if (!done() && value->has_value() && takes(name)) fail(std::string(name) + " given more than once");
  std::string taken;
  if (!take_option(name, &taken)) return false;
  *value = std::move(taken);
  return true;
}

bool ArgCursor::repeated_option(std::string_view name, std::vector<std::string>* values) {
  std::string taken;
  if (!take_option(name, &taken)) return false;
  values->push_back(std::move(taken));
  return true;
}

bool ArgCursor::takes(std::string_view name) const {
  std::string_view arg = peek();
  if (arg.substr(0, name.size()) != name) return false;
  std::string_view tail = arg.substr(name.size());
  return tail.empty() || tail.front() == '=';  // not --keys when looking for --key
}

bool ArgCursor::take_option(std::string_view name, std::string* value) {
  if (done() || !takes(name)) return false;
  std::string_view tail = std::string_view(peek()).substr(name.size());
  ++pos_;
  if (!tail.empty()) {
    *value = std::string(tail.substr(1));
    return true;
  }
  if (done()) fail(std::string(name) + " needs a value");
  *value = take();
  return true;
}

bool ArgCursor::flag(std::string_view name, std::string_view alias) {
  if (done()) {
    return false;
  }
  std::string_view arg = peek();
  if (arg == name || (!alias.empty() && arg == alias)) {
    ++pos_;
    return true;
  }
  if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
    fail(std::string(name) + " takes no value");
  }
  return false;
}

void ArgCursor::unexpected() const {
  const std::string& arg = peek();
  if (arg.size() > 1 && arg[0] == '-') {
    fail("unknown option '" + arg + "'", true);
  }
  fail("unexpected argument '" + arg + "'", true);
}

}  // namespace dblock::cli
