#!/bin/sh
# tools/bpf-same-object.sh OLD.bpf.o NEW.bpf.o
# Whether two builds of a BPF object are the same program: the same instructions
# and relocations in every section, the same symbols, map definitions, globals
# and BTF types. Debug line info (file names, line numbers) may differ: a change
# that only moves code between files (bpf/*.bpf.h) passes. Exit 0 when the same.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 OLD.bpf.o NEW.bpf.o" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for side in old new; do
	[ $side = old ] && o=$1 || o=$2
	llvm-objdump -d -r "$o" | tail -n +3 > "$tmp/$side.dis"
	llvm-objdump -t "$o" | tail -n +3 | sort > "$tmp/$side.sym"
	bpftool btf dump file "$o" > "$tmp/$side.btf"
	for s in $(llvm-objdump -h "$o" | awk '$2 !~ /debug|BTF|^\.rel|^\.strtab|^\.symtab/ && $1 ~ /^[0-9]+$/ {print $2}'); do
		llvm-objcopy -O binary --only-section="$s" "$o" "$tmp/$side.$(echo "$s" | tr / _).bin"
	done
done
status=0
for f in dis sym btf; do
	cmp -s "$tmp/old.$f" "$tmp/new.$f" || { echo "differ: $f"; status=1; }
done
for f in "$tmp"/old.*.bin; do
	n="$tmp/new.${f#"$tmp"/old.}"
	[ -f "$n" ] && cmp -s "$f" "$n" || { echo "differ: section ${f#"$tmp"/old.}"; status=1; }
done
[ "$(ls "$tmp"/old.*.bin | wc -l)" = "$(ls "$tmp"/new.*.bin | wc -l)" ] || { echo "differ: sections"; status=1; }
[ $status = 0 ] && echo "same program: instructions, relocations, symbols, sections and BTF types"
exit $status
