#!/bin/bash
# A throwaway PostgreSQL 15 server for tests: data directory, Unix socket and log all in one
# temporary directory, no TCP listener, nothing left behind after pg_stop. Needs root (the
# server runs as the `postgres` user, which the postgresql-15 package creates).
#
# Sourced:   . tests/runtimes/pg.sh; pg_start [EXTRA_POSTGRES_OPTIONS]; ...; pg_stop
#            pg_start exports PG_DIR, PGHOST (the socket directory), PGPORT, PGUSER,
#            PGDATABASE, PG_POSTMASTER_PID; psql and pgbench then need no further options.
# Executed:  tests/runtimes/pg.sh start [EXTRA...]   prints "export VAR=value" lines to eval
#            tests/runtimes/pg.sh stop DIR           stops the server of DIR and removes DIR
#            tests/runtimes/pg.sh backend DIR [N]    prints the pid of the Nth client backend
#                                                    seen from now on (default 1)
#
# pg_backend_wait: the profiled backend must exist before usdtprof attaches (usdtprof does not
# follow forks, and every connection is a new process forked by the postmaster). Start the
# client with PGOPTIONS='-c post_auth_delay=N' (superuser only: the backend sleeps N seconds
# after authentication, before it reads the first query), then call pg_backend_wait to get
# its pid, then attach within those N seconds:
#   PGOPTIONS='-c post_auth_delay=3' pgbench -n -t 200 -c 1 & pid=$(pg_backend_wait 2)
#   usdtprof record -p "$pid" ...   (ends when the backend exits, after pgbench's last query)

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

pg_start() {
	PG_DIR=$(mktemp -d /tmp/usdtprof-pg.XXXXXX) || return 1
	chown postgres: "$PG_DIR" || { rmdir "$PG_DIR"; return 1; }
	# cd: initdb and pg_ctl, run as postgres, must be able to read the working directory.
	if ! (cd "$PG_DIR" && runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" \
			-U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$PG_DIR/initdb.log" 2>&1); then
		cat "$PG_DIR/initdb.log" >&2
		rm -rf "$PG_DIR"
		return 1
	fi
	if ! (cd "$PG_DIR" && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" \
			-l "$PG_DIR/server.log" -w -t 60 \
			-o "-c listen_addresses='' -k $PG_DIR -p 5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off $*" \
			start >/dev/null); then
		cat "$PG_DIR/server.log" >&2
		rm -rf "$PG_DIR"
		return 1
	fi
	export PG_DIR PGHOST=$PG_DIR PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
	PG_POSTMASTER_PID=$(head -1 "$PG_DIR/data/postmaster.pid")
	export PG_POSTMASTER_PID
}

pg_stop() {
	local dir=${1:-$PG_DIR}
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	if [ -f "$dir/data/postmaster.pid" ]; then
		(cd "$dir" && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 60 \
			stop >/dev/null 2>&1)
	fi
	rm -rf "$dir"
	[ "$dir" = "$PG_DIR" ] && unset PG_DIR PGHOST PGPORT PGUSER PGDATABASE PG_POSTMASTER_PID
	return 0
}

# The pid of the Nth distinct client backend (default 1st) seen from the call on (those that
# exist at the call count too) of the server in DIR (default $PG_DIR); waits up to 20 s.
# Client backends are the postmaster's children whose title has "[local]" ("postgres: USER DB [local] startup" while in
# post_auth_delay); the auxiliary processes are "postgres: checkpointer" etc. pgbench opens a
# setup connection first (it runs pgbench's table-info queries, then closes), so its client
# backend is the 2nd: pg_backend_wait 2.
pg_backend_wait() {
	local n=${1:-1} dir=${2:-$PG_DIR} pm pid i seen=" " count=0
	pm=$(head -1 "$dir/data/postmaster.pid") || return 1
	for i in $(seq 200); do
		for pid in $(pgrep -P "$pm"); do
			case "$seen" in *" $pid "*) continue ;; esac
			if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '\[local\]'; then
				seen="$seen$pid "
				count=$((count + 1))
				if [ "$count" -ge "$n" ]; then
					echo "$pid"
					return 0
				fi
			fi
		done
		sleep 0.1
	done
	return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case "$1" in
	start)
		shift
		pg_start "$@" || exit 1
		for v in PG_DIR PGHOST PGPORT PGUSER PGDATABASE PG_POSTMASTER_PID; do
			echo "export $v=${!v}"
		done
		;;
	stop) pg_stop "$2" ;;
	backend) pg_backend_wait "${3:-1}" "$2" ;;
	*)
		echo "usage: $0 start [POSTGRES_OPTIONS] | stop DIR | backend DIR [N]" >&2
		exit 2
		;;
	esac
fi
