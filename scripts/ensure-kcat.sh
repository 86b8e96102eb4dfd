#!/bin/sh
# ensure-kcat.sh installs Debian's kcat (the librdkafka command-line client)
# when it is missing. The Kafka interoperability tests run the real kcat
# against the embedded broker, so a machine needs it once.
#
# Idempotent: when kcat is already on PATH it does nothing. It needs root
# (or sudo) because it uses apt-get.
set -eu

if command -v kcat >/dev/null 2>&1; then
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "ensure-kcat: kcat is missing and installing it needs root (apt-get install kcat)" >&2
		exit 1
	fi
fi

# apt-get output is kept and shown only when a step fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {
	if ! "$@" >"$log" 2>&1; then
		cat "$log" >&2
		echo "ensure-kcat: failed: $*" >&2
		exit 1
	fi
}
run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat

command -v kcat >/dev/null 2>&1 || {
	echo "ensure-kcat: apt-get finished but kcat is still not on PATH" >&2
	exit 1
}
