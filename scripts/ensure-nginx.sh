#!/usr/bin/env bash
# Installs Debian's nginx when it is missing, for the gateway of the cluster
# runner (make run-cluster) and its tests. The package's own server is kept
# from starting (a policy-rc.d that refuses every service start for the
# length of the install): the runner starts nginx itself, on loopback, with
# the configuration rendered from deploy/gateway/nginx.conf.
# Safe to run any number of times: it does nothing when nginx is present.
set -euo pipefail

if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-nginx: nginx is missing and apt-get is not available; install nginx by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

echo "ensure-nginx: installing Debian's nginx (for the cluster runner's gateway)" >&2
policy=/usr/sbin/policy-rc.d
had_policy=false
if [ -e "$policy" ]; then
	had_policy=true
else
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 755 "$policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
log=$(mktemp)
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends nginx-light; } >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"

[ -x /usr/sbin/nginx ] || {
	echo "ensure-nginx: nginx still missing after apt-get install" >&2
	exit 1
}
