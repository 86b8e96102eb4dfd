#!/usr/bin/env bash
# Installs Debian's prometheus package when promtool is missing, for the
# tests of the alert rules (deploy/prometheus: promtool check rules and
# promtool test rules). The package's own server is kept from starting (a
# policy-rc.d that refuses every service start for the length of the
# install): only its promtool is used.
# Safe to run any number of times: it does nothing when promtool is present.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-promtool: promtool is missing and apt-get is not available; install Prometheus's promtool by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

echo "ensure-promtool: installing Debian's prometheus (for promtool, which checks the alert rules)" >&2
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 755 "$policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
log=$(mktemp)
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"

command -v promtool >/dev/null 2>&1 || {
	echo "ensure-promtool: promtool still missing after apt-get install" >&2
	exit 1
}
