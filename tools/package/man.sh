#!/bin/sh
# Man pages (section 8: a root tool, as bpftrace's) generated from the CLI's own --help by
# help2man, so they never drift from the code: usdtprof.8 and usdtprof-SUB.8 for every
# subcommand `usdtprof --help` lists. Usage: man.sh USDTPROF OUTDIR
set -eu
usdtprof=$(realpath "$1")
out=$2
here=$(dirname "$(realpath "$0")")
version=$("$usdtprof" --version | sed -n '1s/^usdtprof //p')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# help2man names a page after the program it runs: one wrapper per page.
page() { # NAME SUBCOMMAND DESCRIPTION
	printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$usdtprof" "$2" >"$work/$1"
	chmod +x "$work/$1"
	help2man --no-info --no-discard-stderr --section 8 --manual "System Administration Utilities" \
		--source "usdtprof $version" --version-string "$version" --name "$3" \
		--include "$here/man-common.h2m" "$work/$1" >"$work/$1.8"
	gzip -9n <"$work/$1.8" >"$out/$1.8.gz"
}
page usdtprof "" "exact call-path profiles from USDT probes, aggregated in the kernel"
# The "Subcommands:" section of the main help: "  NAME   Description".
"$usdtprof" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z]*\)  *\(.*\)$/\1\t\2/p' |
	while IFS="$(printf '\t')" read -r sub description; do
		# A page's NAME line is short: the description up to its first parenthesis or colon.
		page "usdtprof-$sub" "$sub" "$(printf '%s' "$description" | sed 's/ *[(:].*//' | tr 'A-Z' 'a-z')"
	done
