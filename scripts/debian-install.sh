#!/usr/bin/env bash
# debian-install.sh CALLER WHY PACKAGE...: installs Debian packages for the
# ensure-* scripts that need a server package only for one of its tools or
# start it themselves (nginx, kubernetes-client, prometheus). apt-get runs
# non-interactively, quietly (its output is shown only when it fails), as
# root or through sudo, with a policy-rc.d that refuses every service
# start for the length of the install, so no package's own server starts.
# CALLER names the script in messages; WHY says what the package is for.
# ENSURE_POLICY_RC moves the policy file, for the scripts' tests.
set -euo pipefail

caller=$1 why=$2
shift 2
policy=${ENSURE_POLICY_RC:-/usr/sbin/policy-rc.d}

if ! command -v apt-get >/dev/null 2>&1; then
	echo "$caller: apt-get is not available; install $* by hand ($why)" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

echo "$caller: installing Debian's $* ($why)" >&2
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 755 "$policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
log=$(mktemp)
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"
