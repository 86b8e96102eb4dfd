#!/usr/bin/env bash
# Makes sure the browser tests in deploy/e2e can run: Debian's chromium
# (/usr/bin/chromium), which playwright-core drives. Installed only when it
# is missing; test tools never download browsers of their own.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-chromium: /usr/bin/chromium is missing and apt-get is not available; install Chromium by hand" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "ensure-chromium: apt-get install chromium failed" >&2
	exit 1
fi
/usr/bin/chromium --version >/dev/null
