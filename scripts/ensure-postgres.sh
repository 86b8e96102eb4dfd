#!/usr/bin/env bash
# Makes sure this machine has PostgreSQL server binaries for the embedded
# cluster (platform/devpostgres), installing Debian's package when there are none.
#
# The package would normally create and start a system cluster on port 5432.
# We turn that off before installing: the embedded cluster never needs it, and
# a stray server only costs memory (our port choice avoids 5432 regardless).
#
# Idempotent and quiet on success; on failure it prints apt's output.
set -euo pipefail

# Where Debian's packages put the server; ENSURE_POSTGRES_GLOB moves the
# lookup, for the test of this script.
server_glob=${ENSURE_POSTGRES_GLOB:-/usr/lib/postgresql/*/bin/postgres}

if compgen -G "$server_glob" >/dev/null; then
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	echo "ensure-postgres: no PostgreSQL server binaries and no apt-get;" \
		"install PostgreSQL (initdb and postgres) or set BinDir" >&2
	exit 1
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() {
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive "$@" >>"$log" 2>&1; then
		echo "ensure-postgres: $* failed:" >&2
		cat "$log" >&2
		exit 1
	fi
}

apt_install=(apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold)

echo "ensure-postgres: installing Debian's PostgreSQL server package (once; later runs find it)" >&2
run apt-get update
# postgresql-common first: its createcluster.conf decides whether installing
# a server version creates the "main" cluster.
run "${apt_install[@]}" postgresql-common
run pg_conftool /etc/postgresql-common/createcluster.conf set create_main_cluster false
run "${apt_install[@]}" postgresql

if ! compgen -G "$server_glob" >/dev/null; then
	echo "ensure-postgres: installed postgresql but found no $server_glob" >&2
	exit 1
fi
