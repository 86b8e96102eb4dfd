#!/usr/bin/env bash
# Installs Debian's kubectl (the kubernetes-client package, kubectl 1.20
# with kustomize v2.0.3 on bookworm) when kubectl is missing, for the tests
# of the Kubernetes manifests (deploy/kubernetes_test.go builds every
# overlay with `kubectl kustomize`). The manifests are written for that
# kustomize as well as current ones. The package starts no service; the
# policy-rc.d guard is kept for the packages apt pulls in with it.
# Safe to run any number of times: it does nothing when kubectl is present.
set -euo pipefail

# The command looked for and the policy file written; ENSURE_KUBECTL and
# ENSURE_POLICY_RC move them, for the test of this script.
kubectl=${ENSURE_KUBECTL:-kubectl}
policy=${ENSURE_POLICY_RC:-/usr/sbin/policy-rc.d}

if command -v "$kubectl" >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-kubectl: kubectl is missing and apt-get is not available; install kubectl by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

echo "ensure-kubectl: installing Debian's kubernetes-client (kubectl, for the Kubernetes manifests' tests)" >&2
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 755 "$policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
log=$(mktemp)
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends kubernetes-client; } >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"

command -v "$kubectl" >/dev/null 2>&1 || {
	echo "ensure-kubectl: kubectl still missing after apt-get install" >&2
	exit 1
}
