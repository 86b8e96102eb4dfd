#!/usr/bin/env bash
# Installs Debian's kubectl (the kubernetes-client package, kubectl 1.20
# with kustomize v2.0.3 on bookworm) when kubectl is missing, for the tests
# of the Kubernetes manifests (deploy/kubernetes_test.go builds every
# overlay with `kubectl kustomize`). The manifests are written for that
# kustomize as well as current ones. The package starts no service; the
# policy-rc.d guard of scripts/debian-install.sh covers what apt pulls in.
# Safe to run any number of times: it does nothing when kubectl is present.
set -euo pipefail

# The command looked for; ENSURE_KUBECTL moves it, and ENSURE_POLICY_RC the
# policy file scripts/debian-install.sh writes, for the test of this script.
kubectl=${ENSURE_KUBECTL:-kubectl}

if command -v "$kubectl" >/dev/null 2>&1; then
	exit 0
fi

bash "$(dirname "$0")/debian-install.sh" ensure-kubectl "kubectl, for the Kubernetes manifests' tests" kubernetes-client

command -v "$kubectl" >/dev/null 2>&1 || {
	echo "ensure-kubectl: kubectl still missing after apt-get install" >&2
	exit 1
}
