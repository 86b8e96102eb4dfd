#!/usr/bin/env bash
# Installs Debian's prometheus package when promtool is missing, for the
# tests of the alert rules (deploy/monitoring: promtool check rules and
# promtool test rules). The package's own server is kept from starting
# (scripts/debian-install.sh): only its promtool is used.
# Safe to run any number of times: it does nothing when promtool is present.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
	exit 0
fi

bash "$(dirname "$0")/debian-install.sh" ensure-promtool "for promtool, which checks the alert rules" prometheus

command -v promtool >/dev/null 2>&1 || {
	echo "ensure-promtool: promtool still missing after apt-get install" >&2
	exit 1
}
