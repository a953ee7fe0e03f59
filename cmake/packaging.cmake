# Debian packages through CPack (`cpack -G DEB` in a build configured with BUILD_SHARED_LIBS=ON and
# CMAKE_INSTALL_PREFIX=/usr; scripts/package.sh does both and checks the result):
#   libdblock      the shared libraries (dblock_core and one per service), their SONAME links
#   libdblock-dev  headers, the unversioned .so links, CMake package files, dblock.pc, and the
#                  internal static SQL layer the CMake package names
#   dblock         the command, its man page dblock(1) and its bash completion
# Each install() rule names its component. The libraries' own dependencies (libpqxx, libhiredis,
# ...) come from dpkg-shlibdeps; the packages depend on libdblock of exactly this version.
set(CPACK_PACKAGE_NAME dblock)
set(CPACK_PACKAGE_VENDOR "dblock")
set(CPACK_PACKAGE_CONTACT "dblock maintainers <dblock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "locks on the database you already have")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL libdblock libdblock-dev dblock)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps finds dblock's own libraries here (they are in no installed package yet); the
# dependency on them is the explicit one below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
foreach(b IN LISTS DBLOCK_ENABLED_BACKENDS)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src/backends/${b})
endforeach()
set(_dblock_exact "libdblock (= ${PROJECT_VERSION})")

set(CPACK_DEBIAN_LIBDBLOCK_PACKAGE_NAME libdblock)
set(CPACK_DEBIAN_LIBDBLOCK_DESCRIPTION "dblock: locks on the database you already have (shared libraries)
 Leases with fencing tokens, renewal and expiry on the server's clock, over SQLite, PostgreSQL,
 MariaDB, Redis and ZooKeeper; session, row and optimistic locks on the SQL services.")
set(CPACK_DEBIAN_LIBDBLOCK-DEV_PACKAGE_NAME libdblock-dev)
set(CPACK_DEBIAN_LIBDBLOCK-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_LIBDBLOCK-DEV_PACKAGE_DEPENDS "${_dblock_exact}")
set(CPACK_DEBIAN_LIBDBLOCK-DEV_DESCRIPTION "dblock: locks on the database you already have (development files)
 C++20 headers, the CMake package (find_package(dblock)) and a pkg-config file (dblock).")
set(CPACK_DEBIAN_DBLOCK_PACKAGE_NAME dblock)
set(CPACK_DEBIAN_DBLOCK_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_DBLOCK_PACKAGE_DEPENDS "${_dblock_exact}")
set(CPACK_DEBIAN_DBLOCK_DESCRIPTION "dblock: locks on the database you already have (command)
 dblock run --key NAME -- COMMAND holds a lock while COMMAND runs: flock(1) for a whole cluster.
 Also elect, list, inspect, release --force and a Prometheus exporter.")
include(CPack)
