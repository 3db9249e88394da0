#!/bin/sh
# Installs the Debian packages usdtprof needs, only those that are missing.
# Idempotent: when everything is present it runs no apt-get at all.
set -eu
# libclang-rt-dev: libFuzzer for `make fuzz`; prometheus: the monitor's end-to-end
# test runs its own server (never the packaged service); php-cli ... python3.11: the
# runtimes the presets are tested on (tests/e2e/test_runtimes.cpp; postgresql-15 brings
# pgbench), bpftrace to compare with.
packages="make g++ clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcli11-dev
catch2 systemtap-sdt-dev nlohmann-json3-dev pkg-config libclang-rt-dev libprotobuf-dev
protobuf-compiler libcurl4-openssl-dev libcpp-httplib-dev prometheus php-cli ruby openjdk-17-jdk-headless
postgresql-15 python3.11 bpftrace"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
