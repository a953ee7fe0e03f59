// libpqxx exception -> dblock::Error, by exception type and SQLSTATE class.
#include "error_map.h"

#include <pqxx/except>

#include "dblock/errors.h"

namespace dblock::postgresql {

std::string one_line(std::string_view message) {
  std::string out;
  bool blank = false, line_break = false;
  for (char c : message) {
    if (c == '\n' || c == '\r') {
      line_break = !out.empty();
      blank = false;
    } else if (c == '\t' || c == ' ') {
      blank = !out.empty();
    } else {
      if (line_break) out += "; ";
      else if (blank) out += ' ';
      line_break = blank = false;
      out += c;
    }
  }
  return out;
}

bool is_transient_state(std::string_view sqlstate) noexcept { return sqlstate == "53300" || sqlstate == "57P03"; }

bool is_connection_failure(const std::exception& e) noexcept {
  if (dynamic_cast<const pqxx::broken_connection*>(&e)) return true;
  if (auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string& state = sql->sqlstate();
    // 25006: the server turned read-only under an open connection (default_transaction_read_only
    // set on a demoted primary): the connection goes, and the next one looks for the primary.
    return state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0 || state == "25006";
  }
  return false;
}

void rethrow_translated(const std::string& context) {
  const std::string prefix = "postgresql: " + context + ": ";
  try {
    throw;
  } catch (const dblock::Error&) {
    throw;
  } catch (const pqxx::in_doubt_error& e) {
    throw InDoubtError(prefix + one_line(e.what()), "postgresql");
  } catch (const pqxx::broken_connection& e) {
    throw ConnectionError(prefix + one_line(e.what()), "postgresql", "08006");
  } catch (const pqxx::insufficient_privilege& e) {
    // libpqxx 6 throws this class for SQLSTATE 42501 without filling in sqlstate().
    throw PermissionError(prefix + one_line(e.what()), "postgresql", "42501");
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    auto cls = [&](const char* c) { return state.rfind(c, 0) == 0; };
    std::string message = prefix + one_line(e.what());
    if (cls("08") || cls("57P") || cls("28") || state == "3D000" || cls("53")) {
      throw ConnectionError(message, "postgresql", state, is_transient_state(state));
    }
    if (state == "40001" || state == "40P01") throw Error(message, "postgresql", state, true);
    if (state == "55P03" || state == "57014") throw TimeoutError(message, "postgresql", state, true);
    if (state == "42P01" || state == "42883") throw SchemaError(message + " (run `dblock migrate`)", "postgresql", state);
    if (state == "25006") throw ConnectionError(message + " (read-only: a standby?)", "postgresql", state);
    if (state == "42501") throw PermissionError(message, "postgresql", state);
    if (cls("22") || cls("42")) throw UsageError(message, "postgresql", state);
    throw Error(message, "postgresql", state);
  } catch (const pqxx::usage_error& e) {
    throw UsageError(prefix + one_line(e.what()), "postgresql");
  } catch (const pqxx::failure& e) {
    throw ConnectionError(prefix + one_line(e.what()), "postgresql");
  } catch (const std::exception& e) {
    throw Error(prefix + one_line(e.what()), "postgresql");
  }
}

}  // namespace dblock::postgresql
