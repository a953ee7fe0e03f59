#!/usr/bin/env bash
# Installs what building and testing dblock needs, from Debian 12 packages only.
# Run as root (or with sudo available). Idempotent: skips apt when everything is present.
set -euo pipefail

packages=(build-essential clang cmake ninja-build pkg-config catch2 libsqlite3-dev sqlite3 libpqxx-dev postgresql pgbouncer libmysqlcppconn-dev libssl-dev mariadb-server mariadb-client faketime redis-server redis-tools libhiredis-dev nlohmann-json3-dev libcpp-httplib-dev prometheus curl help2man man-db python3-redis zookeeper libzookeeper-mt-dev libcurator-recipes-java default-jdk-headless etcd-server etcd-client openssl libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc golang-etcd-server-dev golang-github-gogo-protobuf-dev golang-github-grpc-ecosystem-grpc-gateway-dev python3-etcd3)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
