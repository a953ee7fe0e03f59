# Included into the SQLite-only consumer's configure (CMAKE_PROJECT_INCLUDE, run.sh's sqlite case).
# Looking for another service's client library is a hard error here, so the test shows that the
# sqlite component never tries (rather than trying and tolerating a miss): dblock's config asking
# for pkg-config itself (libpqxx, libpq and hiredis are found through it), or anyone looking for
# MySQL Connector/C++'s or the ZooKeeper C client's header or library. Every pkg-config query is also logged by
# pkg-config-spy.sh, which answers none, and checked by run.sh. (pkg-config itself cannot be
# hidden with CMAKE_DISABLE_FIND_PACKAGE_PkgConfig: CMake 3.25's FindOpenSSL, which the sqlite
# component needs, then fails calling pkg_check_modules.)
macro(find_package)
  if("${ARGV0}" STREQUAL "PkgConfig" AND CMAKE_CURRENT_LIST_FILE MATCHES "/dblockConfig[.]cmake$")
    message(FATAL_ERROR "forbidden: dblock's config looked for pkg-config (libpqxx, hiredis)")
  endif()
  _find_package(${ARGV})
endmacro()
macro(find_path)
  if("${ARGV}" MATCHES "cppconn|mysql|zookeeper")
    message(FATAL_ERROR "forbidden: find_path(${ARGV}) (MySQL Connector/C++, ZooKeeper)")
  endif()
  _find_path(${ARGV})
endmacro()
macro(find_library)
  if("${ARGV}" MATCHES "mysqlcppconn|pqxx|hiredis|zookeeper")
    message(FATAL_ERROR "forbidden: find_library(${ARGV})")
  endif()
  _find_library(${ARGV})
endmacro()
