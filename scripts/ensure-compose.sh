#!/usr/bin/env bash
# Installs Debian's docker-compose when it is missing, so that the compose file
# can be validated (docker-compose config) on machines that run no Docker engine.
# Safe to run any number of times: it does nothing when docker-compose is present.
set -euo pipefail

if command -v docker-compose >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-compose: docker-compose is missing and apt-get is not available; install docker-compose by hand" >&2
	exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends docker-compose >/dev/null

command -v docker-compose >/dev/null 2>&1 || {
	echo "ensure-compose: docker-compose still missing after apt-get install" >&2
	exit 1
}
