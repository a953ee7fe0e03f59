#include "dblock/service/sql/statement.h"

#include <stdexcept>

namespace dblock::sql {

namespace {
bool is_letter(char c) { return c >= 'A' && c <= 'Z'; }
}  // namespace

Placeholders& Placeholders::set(char letter, std::string value) {
  if (!is_letter(letter)) throw std::logic_error("sql placeholder letters are A-Z");
  values_[static_cast<std::size_t>(letter - 'A')] = std::move(value);
  set_[static_cast<std::size_t>(letter - 'A')] = true;
  return *this;
}

const std::string* Placeholders::find(char letter) const {
  if (!is_letter(letter) || !set_[static_cast<std::size_t>(letter - 'A')]) return nullptr;
  return &values_[static_cast<std::size_t>(letter - 'A')];
}

Placeholders lease_tables(const std::string& prefix, std::string (*quote)(std::string_view)) {
  Placeholders p;
  p.set('L', quote(prefix + "leases"))
      .set('R', quote(prefix + "readers"))
      .set('W', quote(prefix + "waiters"))
      .set('V', quote(prefix + "schema_version"))
      .set('H', quote(prefix + "force_releases"));
  return p;
}

std::string render(std::string_view tmpl, const Placeholders& placeholders) {
  std::string out;
  out.reserve(tmpl.size() + 64);
  char quote = 0;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{' && i + 2 < tmpl.size() && tmpl[i + 2] == '}') {
      if (const std::string* value = placeholders.find(tmpl[i + 1])) {
        out += *value;
        i += 2;
        continue;
      }
    }
    out += c;
  }
  return out;
}

Registry::Registry(std::span<const Statement* const> statements, const Placeholders& placeholders)
    : statements_(statements.begin(), statements.end()) {
  texts_.reserve(statements_.size());
  for (const Statement* s : statements_) texts_.push_back(render(s->text, placeholders));
}

std::size_t Registry::index(const Statement& statement) const {
  for (std::size_t i = 0; i < statements_.size(); ++i) {
    if (statements_[i] == &statement) return i;
  }
  throw std::logic_error(std::string("sql statement not registered: ") + statement.name);
}

}  // namespace dblock::sql
