#!/bin/sh
# tools/layers.sh [DIR]
# Checks that no file in DIR (default userspace/) includes from a higher layer
# than its own folder's. The layers, bottom to top, are docs/design.md's table:
# base < profile < target < engine < report < serve < session < cli. A folder
# may include from its own layer and those below. Headers that are not ours
# (<...>) or that name no folder of DIR (include/usdtprof/, the generated
# skeleton and html_assets.h) are the bottom: anyone may include them, except
# proto/ (report/'s generated pprof messages). Prints each include that goes
# up as "FILE:LINE: LAYER includes HIGHER/..." and exits 1 when there is one.
set -eu
dir=${1:-userspace}
layers="base profile target engine report serve session cli"
rank() {
	case $1 in proto) set -- report ;; esac
	i=0
	for l in $layers; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}
status=0
for l in $layers; do
	[ -d "$dir/$l" ] || { echo "$dir/$l: no such layer folder" >&2; status=1; continue; }
	own=$(rank "$l")
	# "FILE:LINE:#include "folder/..."
	found=$(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$dir/$l" || true)
	[ -n "$found" ] || continue
	while IFS= read -r hit; do
		folder=${hit##*\"}
		folder=${folder%/}
		r=$(rank "$folder")
		if [ "$r" -gt "$own" ]; then
			echo "${hit%%:#*}: $l includes $folder/" | sed 's/:[[:space:]]*#.*//'
			status=1
		fi
	done <<EOF
$found
EOF
done
[ $status = 0 ] && echo "no include goes up: $layers" >&2
exit $status
