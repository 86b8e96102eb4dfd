#!/usr/bin/env bash
# Installs Debian's nginx when it is missing, for the gateway of the cluster
# runner (make run-cluster) and its tests. The package's own server is kept
# from starting (scripts/debian-install.sh): the runner starts nginx itself,
# on loopback, with the configuration rendered from deploy/gateway/nginx.conf.
# Safe to run any number of times: it does nothing when nginx is present.
set -euo pipefail

if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	exit 0
fi

bash "$(dirname "$0")/debian-install.sh" ensure-nginx "for the cluster runner's gateway" nginx-light

[ -x /usr/sbin/nginx ] || {
	echo "ensure-nginx: nginx still missing after apt-get install" >&2
	exit 1
}
