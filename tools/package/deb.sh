#!/bin/sh
# Builds usdtprof's Debian package from a tree staged by `make install DESTDIR=ROOT PREFIX=/usr`.
# Depends: is what dpkg-shlibdeps finds the binary needs (libbpf1, libelf1, libprotobuf32 ...),
# so it follows the libraries the build really linked. Usage: deb.sh ROOT VERSION OUT.deb
set -eu
root=$(realpath "$1")
version=$2
out=$3
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A package ships stripped binaries (Debian policy 10.1); the build tree keeps the symbols.
strip --strip-unneeded "$root/usr/bin/usdtprof"
# dpkg-shlibdeps reads the package names from a debian/control of its own, and the binary
# from the package's directory under debian/.
mkdir -p "$work/debian/usdtprof/usr/bin"
printf 'Source: usdtprof\n\nPackage: usdtprof\nArchitecture: any\n' >"$work/debian/control"
cp "$root/usr/bin/usdtprof" "$work/debian/usdtprof/usr/bin/"
# (Its warning that the binary is not installed yet is what staging means: left out.)
depends=$(cd "$work" && dpkg-shlibdeps -O -e debian/usdtprof/usr/bin/usdtprof 2>"$work/warnings" |
	sed -n 's/^shlibs:Depends=//p')
grep -v "should already be installed in their package's directory" "$work/warnings" >&2 || true
[ -n "$depends" ] || { echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: usdtprof
Version: $version
Architecture: $arch
Maintainer: usdtprof developers <root@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Suggests: systemtap-sdt-dev
Section: devel
Priority: optional
Description: exact call-path profiler for USDT probes, built on eBPF
 usdtprof attaches eBPF programs to the USDT probes that PHP, Ruby, HotSpot,
 CPython, PostgreSQL and C/C++ programs place at function entry and exit. Per
 thread, in the kernel, it keeps a shadow stack and aggregates calls, inclusive
 and self time per call path, on and off CPU. Reports, folded stacks, pprof,
 Chrome traces, HTML, diffs and continuous monitoring within a CPU budget.
 .
 The probe header for C and C++ programs (usdtprof/usdtprof.h, with a
 pkg-config file) needs sys/sdt.h from systemtap-sdt-dev.
CONTROL
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
