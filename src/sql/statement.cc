#include "dblock/service/sql/statement.h"

#include <algorithm>
#include <stdexcept>

namespace dblock::sql {

namespace {
bool is_letter(char c) { return c >= 'A' && c <= 'Z'; }
bool starts_name(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool in_name(char c) { return starts_name(c) || (c >= '0' && c <= '9'); }
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

DriverText spell_params(std::string_view text, ParamStyle style) {
  DriverText out;
  out.text.reserve(text.size());
  std::vector<std::string> distinct;  // kDollar, kQuestionNumbered: number i+1 is distinct[i]
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ':' && (i == 0 || text[i - 1] != ':') && i + 1 < text.size() && starts_name(text[i + 1])) {
      std::size_t end = i + 1;
      while (end < text.size() && in_name(text[end])) ++end;
      std::string name(text.substr(i + 1, end - i - 1));
      i = end - 1;
      if (style == ParamStyle::kQuestion) {
        out.text += '?';
        out.params.push_back(std::move(name));
        continue;
      }
      auto it = std::find(distinct.begin(), distinct.end(), name);
      if (it == distinct.end()) it = distinct.insert(distinct.end(), std::move(name));
      out.text += style == ParamStyle::kDollar ? '$' : '?';
      out.text += std::to_string(it - distinct.begin() + 1);
      continue;
    }
    out.text += c;
  }
  if (style != ParamStyle::kQuestion) out.params = std::move(distinct);
  return out;
}

Registry::Registry(std::span<const Statement* const> statements, const Placeholders& placeholders,
                   ParamStyle style)
    : statements_(statements.begin(), statements.end()) {
  texts_.reserve(statements_.size());
  params_.reserve(statements_.size());
  for (const Statement* s : statements_) {
    DriverText spelled = spell_params(render(s->text, placeholders), style);
    texts_.push_back(std::move(spelled.text));
    params_.push_back(std::move(spelled.params));
  }
}

std::size_t Registry::index(const Statement& statement) const {
  for (std::size_t i = 0; i < statements_.size(); ++i) {
    if (statements_[i] == &statement) return i;
  }
  throw std::logic_error(std::string("sql statement not registered: ") + statement.name);
}

}  // namespace dblock::sql
