#!/usr/bin/env bash
# ctest driver: installs the build tree into a staging prefix, then configures (and builds and
# runs) tests/consumer against it with find_package(dblock). One case per call:
#   all "<services>"  find_package(dblock REQUIRED): every service built; its program lists each
#                     of <services> among its schemes and takes a lease on SQLite.
#   sqlite            find_package(dblock REQUIRED COMPONENTS sqlite) with pkg-config finding nothing
#                     and logging each query (pkg-config-spy.sh), and every lookup of another
#                     service's client library a hard error (forbid_other_services.cmake); no
#                     query for libpqxx, libpq or hiredis; the program opens only sqlite:, takes a
#                     lease on it, and loads neither libpq(xx), libmysqlcppconn nor libhiredis (ldd).
#   components "<services>"  configure only: a required component this installation lacks fails
#                     with a message naming it; the same one asked as optional does not; with
#                     postgresql among <services>, that component asked for while pkg-config finds
#                     nothing fails with a message naming libpqxx.
#   custom_service    examples/custom_service (a service of its own, on the installed kit alone,
#                     find_package(dblock COMPONENTS core)): configured, built, and its ctest run —
#                     its demo program and dblock's installed conformance suite on it.
set -euo pipefail
build_dir="$1"; source_dir="$2"; case="$3"
work="$(mktemp -d)"
trap '[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
consumer="$(cd "$source_dir/tests/consumer" && pwd)"

fail() { echo "FAIL: $*" >&2; exit 1; }

configure() {  # configure <build dir> <cmake args...>; output in <build dir>.log
  local dir="$1"; shift
  cmake -S "$consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" \
    >"$dir.log" 2>&1
}

case "$case" in
  all)
    configure "$work/build" || { cat "$work/build.log"; fail "configure"; }
    cmake --build "$work/build" >/dev/null
    out="$("$work/build/consumer" "sqlite://$work/consumer.db")" || { echo "$out"; fail "consumer on SQLite"; }
    echo "$out"
    schemes=" $(sed -n 's/^consumer schemes: //p' <<<"$out") "
    for service in ${4:-}; do
      [[ "$schemes" == *" $service "* ]] || fail "scheme $service missing"
    done
    ;;
  sqlite)
    DBLOCK_PKG_CONFIG_LOG="$work/pkg-config.log" configure "$work/build" -DDBLOCK_CONSUMER_COMPONENTS=sqlite \
      -DPKG_CONFIG_EXECUTABLE="$consumer/pkg-config-spy.sh" -DCMAKE_PROJECT_INCLUDE="$consumer/forbid_other_services.cmake" ||
      { cat "$work/build.log"; fail "configure"; }
    grep -q openssl "$work/pkg-config.log" || fail "pkg-config-spy.sh was not used (no query for openssl logged)"
    if grep -Ei 'pqxx|libpq|hiredis' "$work/pkg-config.log"; then fail "pkg-config was asked for another service"; fi
    cmake --build "$work/build" >/dev/null
    out="$("$work/build/consumer" "sqlite://$work/consumer.db")" || { echo "$out"; fail "consumer on SQLite"; }
    echo "$out"
    grep -qx "consumer schemes: sqlite" <<<"$out" || fail "schemes other than sqlite linked in"
    out="$("$work/build/consumer" "postgresql://u@127.0.0.1:1/db")" && fail "postgresql: opened"
    echo "$out"
    grep -q "unsupported URL scheme 'postgresql' (this program can open: sqlite)" <<<"$out" || fail "postgresql: $out"
    # ldd: the NEEDED entries of the program and of every library it loads (dblock's own, when shared).
    needed="$(ldd "$work/build/consumer")"
    echo "$needed"
    grep -q "libsqlite3" <<<"$needed" || fail "ldd lists no libsqlite3"
    if grep -Ei 'libpq|mysqlcppconn|hiredis|zookeeper|grpc|protobuf' <<<"$needed"; then fail "another service's client library is loaded"; fi
    ;;
  custom_service)
    example="$(cd "$source_dir/examples/custom_service" && pwd)"
    cmake -S "$example" -B "$work/lockdir" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      >"$work/lockdir.log" 2>&1 || { cat "$work/lockdir.log"; fail "configure examples/custom_service"; }
    cmake --build "$work/lockdir" -j "${JOBS:-2}" >"$work/lockdir-build.log" 2>&1 ||
      { cat "$work/lockdir-build.log"; fail "build examples/custom_service"; }
    ctest --test-dir "$work/lockdir" --output-on-failure || fail "examples/custom_service's tests"
    ;;
  components)
    # consul: a service dblock has no backend for (no installation has it).
    if configure "$work/absent" -DDBLOCK_CONSUMER_COMPONENTS="sqlite;consul"; then
      fail "a required component that was not built was found"
    fi
    grep -q "component 'consul': this installation was built without it" "$work/absent.log" ||
      { cat "$work/absent.log"; fail "no message naming the missing component"; }
    configure "$work/optional" -DDBLOCK_CONSUMER_COMPONENTS=sqlite -DDBLOCK_CONSUMER_OPTIONAL=consul ||
      { cat "$work/optional.log"; fail "an optional component that was not built failed the find"; }
    grep -q "consumer: dblock_sqlite_FOUND=TRUE" "$work/optional.log" || fail "sqlite not found"
    grep -q "consumer: dblock_consul_FOUND=FALSE" "$work/optional.log" || fail "consul reported found"
    if [[ " ${4:-} " == *" postgresql "* ]]; then
      if configure "$work/nopqxx" -DDBLOCK_CONSUMER_COMPONENTS="postgresql" \
          -DPKG_CONFIG_EXECUTABLE="$consumer/pkg-config-spy.sh"; then
        fail "the postgresql component was found without libpqxx"
      fi
      grep -q "component 'postgresql': libpqxx libpq through pkg-config (libpqxx-dev)" "$work/nopqxx.log" ||
        { cat "$work/nopqxx.log"; fail "no message naming libpqxx"; }
    fi
    echo "components: ok"
    ;;
  *) fail "unknown case '$case'" ;;
esac
