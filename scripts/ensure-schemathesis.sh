#!/usr/bin/env bash
# ensure-schemathesis.sh installs Schemathesis, the property-based API fuzzer
# that tests the dev stack against platform/api/openapi.yaml
# (deploy/devstack/apifuzz_test.go), into a virtual environment of the
# repository's ignored cache: .cache/schemathesis/<version>/venv. Python's
# venv module comes from Debian's python3-venv when it is missing.
#
# Idempotent and quiet on success: it does nothing when the pinned version is
# already installed, and prints the venv's schemathesis path (st) last.
set -euo pipefail

VERSION=4.32.5
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/schemathesis/$VERSION"
st="$dir/venv/bin/st"
# The stamp is written last, so an install cut short is done again.
stamp="$dir/installed"

if [ -f "$stamp" ] && [ -x "$st" ]; then
	echo "$st"
	exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() {
	cat "$log" >&2
	echo "ensure-schemathesis: $*" >&2
	exit 1
}

# Python 3.11's parser can fail with "AST constructor recursion depth
# mismatch" on the large sources Hypothesis reads to describe its strategies
# (CPython issue 106905), which Schemathesis reports as an error of the run.
# The newest Python that runs is taken: 3.13 or 3.12 on PATH or installed by
# pyenv, else python3.
python=""
candidates="python3.13 python3.12"
if command -v pyenv >/dev/null 2>&1; then
	pyenv_root=$(pyenv root)
	candidates="$candidates $(ls -d "$pyenv_root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV | tr '\n' ' ')"
fi
for candidate in $candidates python3; do
	if "$candidate" -c '' >/dev/null 2>&1; then
		python=$candidate
		break
	fi
done
if [ -z "$python" ]; then
	echo "ensure-schemathesis: python3 is missing; install Python 3.12 or later" >&2
	exit 1
fi
# Debian splits venv (and the ensurepip it needs) into python3-venv.
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "ensure-schemathesis: python3-venv is missing and installing it needs root (apt-get install python3-venv)" >&2
			exit 1
		fi
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
	{ $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends python3-venv; } >"$log" 2>&1 ||
		fail "apt-get install python3-venv failed"
fi

rm -rf "$dir"
mkdir -p "$dir"
"$python" -m venv "$dir/venv" >"$log" 2>&1 || fail "$python -m venv $dir/venv failed"
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" >"$log" 2>&1 ||
	fail "pip install schemathesis==$VERSION failed"
"$st" --version >"$log" 2>&1 || fail "$st does not run"
echo "$VERSION" >"$stamp"
echo "$st"
