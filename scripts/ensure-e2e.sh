#!/usr/bin/env bash
# Makes sure the end-to-end tests in deploy/e2e can run: Node.js and npm
# (Debian's packages when they are missing), then the exact dependencies of
# deploy/e2e/package-lock.json (npm ci). Every test of that package shares
# this one install.
#
# Idempotent and quiet on success: npm ci runs only when node_modules is
# missing or was installed from another package-lock.json.
set -euo pipefail

cd "$(dirname "$0")/../deploy/e2e"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "ensure-e2e: node and npm are missing and apt-get is not available; install Node.js 18 or later by hand" >&2
		exit 1
	fi
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
	if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends nodejs npm; } >"$log" 2>&1; then
		cat "$log" >&2
		echo "ensure-e2e: apt-get install nodejs npm failed" >&2
		exit 1
	fi
fi

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
	echo "ensure-e2e: node $(node --version) is too old; the e2e tests need Node.js 18 or later" >&2
	exit 1
fi

stamp=node_modules/.installed-from
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npm ci --no-audit --no-fund >"$log" 2>&1; then
	cat "$log" >&2
	echo "ensure-e2e: npm ci in deploy/e2e failed" >&2
	exit 1
fi
echo "$want" >"$stamp"
