#!/usr/bin/env bash
# Builds the Debian packages (cmake/packaging.cmake), installs them on this machine and uses them
# as a user would: two programs built against the installed library (one with pkg-config, one
# with find_package), the command, its man page and its bash completion. Then removes them again
# (KEEP_PACKAGES=1 keeps them). Run as root (or with sudo); after scripts/install-deps.sh.
#
# With --build-only it configures and builds the packages' build directory and stops there
# (scripts/test.sh --all builds it while the sanitizer tests run).
#
# Environment: JOBS (build jobs), DBLOCK_PACKAGE_DIR (build directory, default build-deb).
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$(pwd)"
build_dir="${DBLOCK_PACKAGE_DIR:-build-deb}"
jobs="${JOBS:-$(nproc)}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
fail() { echo "package.sh: FAIL: $*" >&2; exit 1; }

echo "=== dblock packages ($build_dir) ==="
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_BENCH=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_CLI=ON \
  -DDBLOCK_WITH_SQLITE=ON -DDBLOCK_WITH_POSTGRESQL=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_REDIS=ON \
  -DDBLOCK_WITH_ZOOKEEPER=ON -DDBLOCK_WITH_ETCD=ON >/dev/null
cmake --build "$build_dir" -j "$jobs"
if [[ "${1:-}" == "--build-only" ]]; then exit 0; fi
rm -f "$build_dir"/*.deb
(cd "$build_dir" && cpack -G DEB >/dev/null)
debs=("$build_dir"/libdblock_*.deb "$build_dir"/libdblock-dev_*.deb "$build_dir"/dblock_*.deb)
for deb in "${debs[@]}"; do
  [[ -f "$deb" ]] || fail "no package $deb"
  echo "--- $(basename "$deb")"
  dpkg-deb --field "$deb" Package Version Depends
  dpkg-deb --contents "$deb" | awk '{print "    " $6 ($7 ? " " $7 " " $8 : "")}' | grep -v '/$'
done

remove() { [[ -n "${KEEP_PACKAGES:-}" ]] || $SUDO dpkg --purge dblock libdblock-dev libdblock >/dev/null 2>&1 || true; }
trap remove EXIT
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq --no-install-recommends "${debs[@]/#/$source_dir/}" bash-completion >/dev/null

work="$(mktemp -d)"
trap 'remove; rm -rf "$work"' EXIT
services="sqlite postgresql mysql redis zookeeper etcd"
check_consumer() {  # check_consumer <program> <what>
  local out
  out="$("$1" "sqlite://$work/$2.db")" || { echo "$out"; fail "$2: the program failed on SQLite"; }
  echo "$2: $out" | tr '\n' ' '; echo
  for s in $services; do
    grep -q "^consumer schemes: .*\b$s\b" <<<"$out" || fail "$2: scheme $s missing"
  done
  grep -q "^consumer fence [0-9]" <<<"$out" || fail "$2: no lease taken"
}

# 1. pkg-config, as a Makefile would use it.
g++ -std=c++20 -o "$work/pc_consumer" tests/consumer/main.cc $(pkg-config --cflags --libs dblock) ||
  fail "pkg-config consumer does not build"
check_consumer "$work/pc_consumer" pkg-config
ldd "$work/pc_consumer" | grep -q "libdblock_core.so.0" || fail "pkg-config consumer does not load libdblock_core"

# 2. find_package(dblock), from /usr, without the client libraries' development files needed.
cmake -S tests/consumer -B "$work/fp" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/fp.log" 2>&1 ||
  { cat "$work/fp.log"; fail "find_package consumer: configure"; }
cmake --build "$work/fp" >/dev/null || fail "find_package consumer: build"
check_consumer "$work/fp/consumer" find_package

# 3. The command, its man page and its completion.
dblock version | grep -q "postgresql" || fail "dblock version"
dblock --url "sqlite://$work/cli.db" run --key packaged -- true || fail "dblock run"
page="$(LC_ALL=C MANWIDTH=200 man dblock 2>/dev/null)" || fail "man dblock"
for option in --metrics-textfile --listen --hold-at-least; do
  grep -q -e "$option" <<<"$page" || fail "man dblock lacks $option"
done
offered="$(bash --norc -c 'source /usr/share/bash-completion/bash_completion; _completion_loader dblock;
  COMP_WORDS=(dblock expo); COMP_CWORD=1; _dblock; echo "${COMPREPLY[*]}"')"
[[ "$offered" == "exporter" ]] || fail "installed bash completion offered '$offered' for 'dblock expo'"
echo "package.sh: the packages install, link (pkg-config, find_package), run, and carry dblock(1) and the completion"
