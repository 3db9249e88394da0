#!/bin/sh
# Installs the Debian packages usdtprof needs, only those that are missing.
# Idempotent: when everything is present it runs no apt-get at all.
set -eu
# libclang-rt-dev: libFuzzer for `make fuzz`; prometheus: the monitor's end-to-end
# test runs its own server (never the packaged service); php-cli ... python3.11: the
# runtimes the presets are tested on (tests/e2e/test_runtimes.cpp; postgresql-15 brings
# pgbench), bpftrace to compare with; golang-go (go tool pprof), chromium and nodejs/npm:
# the viewers the outputs are tested in (tests/e2e/test_clients.cpp, docs/viewing.md);
# help2man, man-db, dpkg-dev: the man pages and the Debian package (make deb, docs/install.md).
packages="make g++ clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcli11-dev
catch2 systemtap-sdt-dev nlohmann-json3-dev pkg-config libclang-rt-dev libprotobuf-dev
protobuf-compiler libcurl4-openssl-dev libcpp-httplib-dev libyaml-cpp-dev libssl-dev libcrypt-dev prometheus php-cli ruby openjdk-17-jdk-headless
postgresql-15 python3.11 bpftrace golang-go chromium nodejs help2man man-db dpkg-dev"
# Debian's nodejs comes without npm; NodeSource's (on some images) brings its own.
command -v npm >/dev/null 2>&1 || packages="$packages npm"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing Debian packages:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi

# The npm viewers (the DevTools trace engine, speedscope, puppeteer-core), at the exact
# versions of tests/clients/package-lock.json; again only when what is installed differs.
clients="$(dirname "$0")/../tests/clients"
if ! cmp -s "$clients/package-lock.json" "$clients/node_modules/.package-lock.copy"; then
	echo "installing npm packages of $clients (npm ci)"
	(cd "$clients" && npm ci --no-audit --no-fund --loglevel=error &&
		cp package-lock.json node_modules/.package-lock.copy)
fi
