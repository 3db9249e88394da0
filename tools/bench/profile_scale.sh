#!/bin/bash
# `make bench` (or `make bench-scale` alone): what reading and rendering a large profile costs.
#
#   tools/bench/profile_scale.sh USDTPROF GEN_PROFILE [BASELINE_USDTPROF]
#
# For each size in SCALE_PATHS (10k, 100k, 1M call paths) and each depth in SCALE_DEPTHS (40,
# 120), GEN_PROFILE (tools/gen_profile.cpp) writes a synthetic valid profile (10,000 function
# names of ~35 characters, one process; cached in SCALE_DIR, default .output/bench/profiles),
# in format version SCALE_VERSION (default 2, what record writes; 1 for the JSON body),
# then each command of issue 16's table runs on it, its output counted by `wc -c`:
#   report | report --tree | report --format json | export --format folded | export --format pprof
# /usr/bin/time gives each run's elapsed time, CPU time (user + system) and peak RSS: on a
# shared host the elapsed time follows the load, the CPU time much less. Each command runs SCALE_RUNS times
# (default 1) and the fastest run is shown. With BASELINE_USDTPROF (say, a build of an older
# main), every run of USDTPROF is paired with one of the baseline on the same profile (in
# version SCALE_BASELINE_VERSION, default 1, which every build reads), in the same minute, and the table shows both and their ratio: side by side, so the machine's load (shared
# with others) weighs on both alike.
#
# A run is stopped at SCALE_TIMEOUT seconds (default 300) or when its address space would exceed
# SCALE_MAX_MB (default 8192): the table then says "timeout" or "> N MB" instead of a figure.
# SCALE_COMMANDS (a |-separated list) runs some of the commands only.
# Output: one Markdown table per depth, then the growth from each size to the next (CPU time and RSS
# ratios: 10 would be linear for a tenfold size).
set -u
set -o pipefail

usdtprof=${1:?usage: profile_scale.sh USDTPROF GEN_PROFILE [BASELINE_USDTPROF]}
gen=${2:?usage: profile_scale.sh USDTPROF GEN_PROFILE [BASELINE_USDTPROF]}
baseline=${3:-}
paths_list=${SCALE_PATHS:-10000 100000 1000000}
depths=${SCALE_DEPTHS:-40 120}
dir=${SCALE_DIR:-.output/bench/profiles}
runs=${SCALE_RUNS:-1}
timeout_s=${SCALE_TIMEOUT:-300}
max_mb=${SCALE_MAX_MB:-8192}
version=${SCALE_VERSION:-2}
base_version=${SCALE_BASELINE_VERSION:-1}
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

commands=("report" "report --tree" "report --format json" "export --format folded" "export --format pprof")
if [ -n "${SCALE_COMMANDS:-}" ]; then
	IFS='|' read -r -a commands <<<"$SCALE_COMMANDS"
fi

# run BIN FILE CMD... -> "seconds kb bytes cpu-seconds" or "timeout"/"limit"
run_one() {
	local bin=$1 file=$2
	shift 2
	local tfile=$tmp/time rc bytes
	bytes=$( (ulimit -v $((max_mb * 1024)); /usr/bin/time -f '%e %M %U %S' -o "$tfile" \
		timeout "$timeout_s" "$bin" "$@" "$file" 2>"$tmp/err") | wc -c)
	rc=$?
	if grep -q 'Command exited with non-zero status 124' "$tfile" 2>/dev/null; then
		echo timeout
	elif grep -q 'non-zero status\|signal' "$tfile"; then
		echo limit
	else
		tail -n 1 "$tfile" | awk -v b="$bytes" '{printf "%s %s %s %.2f\n", $1, $2, b, $3 + $4}'
	fi
	return $rc
}

# best of SCALE_RUNS: "seconds kb bytes" with the least time
best_of() {
	local best="" r
	for _ in $(seq "$runs"); do
		r=$(run_one "$@")
		case $r in timeout | limit) echo "$r"; return ;; esac
		if [ -z "$best" ] || awk -v a="${r%% *}" -v b="${best%% *}" 'BEGIN{exit !(a < b)}'; then
			best=$r
		fi
	done
	echo "$best"
}

fmt() { # "seconds kb bytes cpu" -> "1.23 s (0.45 s CPU) / 456 MB"
	case $1 in
	timeout) echo "timeout (${timeout_s} s)" ;;
	limit) echo "> ${max_mb} MB" ;;
	*) awk -v r="$1" 'BEGIN{split(r, a, " "); printf "%.2f s (%.2f s CPU) / %.0f MB", a[1], a[4], a[2] / 1024}' ;;
	esac
}

ratio() { # after before -> "0.12x CPU time / 0.20x RSS"
	case "$1$2" in *timeout* | *limit*) echo "-"; return ;; esac
	awk -v a="$1" -v b="$2" 'BEGIN{split(a, x, " "); split(b, y, " ");
		printf "%.2fx / %.2fx", (y[4] > 0 ? x[4] / y[4] : 0), x[2] / y[2]}'
}

declare -A result base
echo "profile_scale: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for depth in $depths; do
	for n in $paths_list; do
		for v in "$version" "$base_version"; do
			f=$dir/p$n-d$depth-v$v.data
			if ! [ -s "$f" ] || [ "$gen" -nt "$f" ]; then
				"$gen" --paths "$n" --functions 10000 --depth "$depth" --processes 1 --version "$v" -o "$f" || exit 1
			fi
			[ -z "$baseline" ] && break
		done
		file=$dir/p$n-d$depth-v$version.data
		v1file=$dir/p$n-d$depth-v$base_version.data
		echo "p$n d$depth: $(du -m "$file" | cut -f1) MB profile (version $version)"
		for c in "${commands[@]}"; do
			# shellcheck disable=SC2086
			result[$depth,$n,$c]=$(best_of "$usdtprof" "$file" $c)
			# shellcheck disable=SC2086
			[ -n "$baseline" ] && base[$depth,$n,$c]=$(best_of "$baseline" "$v1file" $c)
		done
	done
	echo
	echo "### depth $depth"
	echo
	header="| command |"
	rule="|---|"
	for n in $paths_list; do
		header+=" $n paths |"
		rule+="---|"
		[ -n "$baseline" ] && header+=" baseline |" && rule+="---|" && header+=" ratio (CPU / RSS) |" && rule+="---|"
	done
	echo "$header"
	echo "$rule"
	for c in "${commands[@]}"; do
		row="| \`$c\` |"
		for n in $paths_list; do
			row+=" $(fmt "${result[$depth,$n,$c]}") |"
			if [ -n "$baseline" ]; then
				row+=" $(fmt "${base[$depth,$n,$c]}") | $(ratio "${result[$depth,$n,$c]}" "${base[$depth,$n,$c]}") |"
			fi
		done
		echo "$row"
	done
	echo
	echo "growth (CPU time / RSS / output bytes) from one size to the next:"
	for c in "${commands[@]}"; do
		prev=""
		line="  $c:"
		for n in $paths_list; do
			r=${result[$depth,$n,$c]}
			if [ -n "$prev" ]; then
				case "$r$prev" in
				*timeout* | *limit*) line+=" -" ;;
				*) line+=$(awk -v a="$r" -v b="$prev" 'BEGIN{split(a, x, " "); split(b, y, " ");
					printf " %.1fx/%.1fx/%.1fx", (y[4] > 0 ? x[4] / y[4] : 0), x[2] / y[2], (y[3] > 0 ? x[3] / y[3] : 0)}') ;;
				esac
			fi
			prev=$r
		done
		echo "$line"
	done
	echo
done
