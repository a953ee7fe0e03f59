#!/usr/bin/env bash
# ctest driver: installs the build tree into a staging prefix, then configures, builds and runs
# tests/consumer against it with find_package(dblock).
set -euo pipefail
build_dir="$1"; source_dir="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer" "sqlite://$work/consumer.db"
