// Connector/C++ exception -> dblock::Error, by server/client error number (SQLSTATE is "HY000" for
// most MySQL errors, so the number is what carries the meaning).
#include "error_map.h"

#include <cppconn/exception.h>

#include "dblock/errors.h"

namespace dblock::mysql {

namespace {

constexpr const char* kBackend = "mysql";

// No server reachable (yet), or one that is going away or full: an open that is part of a wait
// tries again. Refusals (access denied, unknown database) are not among them.
bool is_transient_connection_code(int code) {
  switch (code) {
    case 1040:  // ER_CON_COUNT_ERROR: too many connections
    case 1053:  // ER_SERVER_SHUTDOWN
    case 2002:  // CR_CONNECTION_ERROR: can't connect (socket)
    case 2003:  // CR_CONN_HOST_ERROR: can't connect (TCP)
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2055:  // CR_SERVER_LOST_EXTENDED
      return true;
    default:
      return false;
  }
}

bool is_connection_code(int code) {
  // Client-side errors (CR_*: 2002 can't connect via socket, 2003 can't connect via TCP, 2005 unknown
  // host, 2006 server has gone away, 2013 lost connection during query, 2055 lost connection at
  // handshake/reading, 2026 TLS, ...): the connection is unusable or was never made.
  if (code >= 2000 && code < 3000) return true;
  switch (code) {
    case 1040:  // ER_CON_COUNT_ERROR: too many connections
    case 1042:  // ER_BAD_HOST_ERROR
    case 1043:  // ER_HANDSHAKE_ERROR
    case 1044:  // ER_DBACCESS_DENIED_ERROR
    case 1045:  // ER_ACCESS_DENIED_ERROR
    case 1049:  // ER_BAD_DB_ERROR: unknown database
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1077:  // ER_NORMAL_SHUTDOWN
    case 1078:  // ER_GOT_SIGNAL
    case 1079:  // ER_SHUTDOWN_COMPLETE
    case 1129:  // ER_HOST_IS_BLOCKED
    case 1130:  // ER_HOST_NOT_PRIVILEGED
    case 1152:  // ER_ABORTING_CONNECTION
    case 1153:  // ER_NET_PACKET_TOO_LARGE
    case 1158:  // ER_NET_READ_ERROR
    case 1159:  // ER_NET_READ_INTERRUPTED
    case 1160:  // ER_NET_ERROR_ON_WRITE
    case 1161:  // ER_NET_WRITE_INTERRUPTED
    case 1184:  // ER_NEW_ABORTING_CONNECTION
    case 1226:  // ER_USER_LIMIT_REACHED
    case 1251:  // ER_NOT_SUPPORTED_AUTH_MODE
    case 1820:  // ER_MUST_CHANGE_PASSWORD
    case 1862:  // ER_MUST_CHANGE_PASSWORD_LOGIN
    case 1927:  // ER_CONNECTION_KILLED (MariaDB: KILL of this connection)
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT
      return true;
    default:
      return false;
  }
}

}  // namespace

int error_code(const std::exception& e) noexcept {
  if (auto* sql = dynamic_cast<const ::sql::SQLException*>(&e)) return sql->getErrorCode();
  return 0;
}

bool is_connection_failure(const std::exception& e) noexcept {
  // Connector/C++ reports a closed connection object as InvalidInstanceException (code 0).
  if (dynamic_cast<const ::sql::InvalidInstanceException*>(&e)) return true;
  if (auto* sql = dynamic_cast<const ::sql::SQLException*>(&e)) {
    const std::string& state = sql->getSQLState();
    // A read-only server (1290 --read-only, 1836 read-only mode: a replica, or a demoted
    // primary) counts too: the connection goes, and the next one tries the URL's hosts again.
    const int code = sql->getErrorCode();
    return is_connection_code(code) || code == 1290 || code == 1836 || state.rfind("08", 0) == 0;
  }
  return false;
}

void rethrow_translated(const std::string& context) {
  const std::string prefix = "mysql: " + context + ": ";
  try {
    throw;
  } catch (const dblock::Error&) {
    throw;
  } catch (const ::sql::InvalidInstanceException& e) {
    throw ConnectionError(prefix + e.what(), kBackend);
  } catch (const ::sql::SQLException& e) {
    const int code = e.getErrorCode();
    const std::string& state = e.getSQLState();
    // Errors keep their SQLSTATE when it says something; MySQL's catch-all HY000 is replaced by the
    // error number.
    const std::string code_text = (state.empty() || state == "HY000") && code != 0 ? std::to_string(code) : state;
    std::string message = prefix + e.what();
    if (code != 0) message += " (error " + std::to_string(code) + ")";
    if (is_connection_code(code) || state.rfind("08", 0) == 0) {
      throw ConnectionError(message, kBackend, code_text, is_transient_connection_code(code));
    }
    switch (code) {
      case kErrDeadlock:
        throw Error(message, kBackend, code_text, true);
      case kErrLockWaitTimeout:
      case kErrStatementTimeout:
      case 3024:  // ER_QUERY_TIMEOUT (MySQL's max_execution_time)
        throw TimeoutError(message, kBackend, code_text, true);
      case 1142:  // ER_TABLEACCESS_DENIED_ERROR
      case 1143:  // ER_COLUMNACCESS_DENIED_ERROR
      case 1227:  // ER_SPECIFIC_ACCESS_DENIED_ERROR
      case 1370:  // ER_PROCACCESS_DENIED_ERROR
        throw PermissionError(message, kBackend, code_text);
      case 1146:  // ER_NO_SUCH_TABLE
        throw SchemaError(message + " (run `dblock migrate`)", kBackend, code_text);
      case 1290:  // ER_OPTION_PREVENTS_STATEMENT (--read-only)
      case 1792:  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
      case 1836:  // ER_READ_ONLY_MODE
        throw ConnectionError(message + " (read-only: a replica?)", kBackend, code_text);
      case 1317:  // ER_QUERY_INTERRUPTED (KILL QUERY)
        throw Error(message, kBackend, code_text, true);
      default:
        break;
    }
    // SQLSTATE classes 42 (syntax, access rule, unknown column) and 22 (data exception): the
    // statement or its arguments are wrong.
    if (state.rfind("42", 0) == 0 || state.rfind("22", 0) == 0) throw UsageError(message, kBackend, code_text);
    throw Error(message, kBackend, code_text);
  } catch (const std::exception& e) {
    throw Error(prefix + e.what(), kBackend);
  }
}

}  // namespace dblock::mysql
