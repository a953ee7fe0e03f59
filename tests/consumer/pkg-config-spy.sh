#!/usr/bin/env bash
# A pkg-config that finds nothing and appends each query to $DBLOCK_PKG_CONFIG_LOG (run.sh's sqlite
# case: PKG_CONFIG_EXECUTABLE). Answers --version so that CMake's FindPkgConfig accepts it.
echo "$*" >>"${DBLOCK_PKG_CONFIG_LOG:-/dev/null}"
if [[ " $* " == *" --version "* ]]; then
  echo "0.29.2"
  exit 0
fi
exit 1
