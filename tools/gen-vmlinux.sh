#!/bin/sh
# Regenerates vmlinux/vmlinux.h from the running kernel's BTF. The BPF code is
# CO-RE, so the committed header works on any kernel with BTF; regenerate only
# to pick up new kernel types.
set -eu
btf=${1:-/sys/kernel/btf/vmlinux}
out=$(dirname "$0")/../vmlinux/vmlinux.h
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
