#!/usr/bin/env bash
# Makes sure this machine can run the pinned Apache Kafka broker from jars:
# a Java 17+ runtime and Maven (Debian's packages, installed only when
# missing), and the broker's jars, resolved from Maven Central by
# deploy/kafka/pom.xml into .cache/kafka/<version>/libs. Maven keeps what it
# downloaded in ~/.m2, so a second clone on the same machine resolves offline.
# Then the class-data sharing archive the brokers' JVMs map to start with
# less CPU (platform/kafka/kraft/cmd/kraftarchive), trained beside libs once
# per JVM and set of jars; without Go, or if training fails, brokers start
# without it, only slower.
#
# Prints the libs directory. Idempotent and quiet when everything is there;
# on failure it prints the failing command's output.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pom="$root/deploy/kafka/pom.xml"
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
if [[ -z $version ]]; then
	echo "ensure-kafka: no <kafka.version> in $pom" >&2
	exit 1
fi
libs="$root/.cache/kafka/$version/libs"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# archive trains the class archive unless it is there (then it takes a
# fraction of a second); a failure is reported and costs only speed.
archive() {
	local go=${GO:-go}
	if ! command -v "$go" >/dev/null; then
		return
	fi
	if ! (cd "$root" && KAFKA_LIBS=$libs "$go" run ./platform/kafka/kraft/cmd/kraftarchive) >"$log" 2>&1; then
		echo "ensure-kafka: no class archive, brokers start without it:" >&2
		cat "$log" >&2
	fi
}

if [[ -f $libs/.complete ]]; then
	archive
	echo "$libs"
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi

run() {
	if ! "$@" >>"$log" 2>&1; then
		echo "ensure-kafka: $* failed:" >&2
		cat "$log" >&2
		exit 1
	fi
}

java_major() {
	java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'
}

missing=()
if ! command -v java >/dev/null || [[ $(java_major) -lt 17 ]]; then
	missing+=(openjdk-17-jre-headless)
fi
if ! command -v mvn >/dev/null; then
	missing+=(maven)
fi
if ((${#missing[@]})); then
	if ! command -v apt-get >/dev/null; then
		echo "ensure-kafka: need ${missing[*]} and there is no apt-get; install Java 17+ and Maven" >&2
		exit 1
	fi
	echo "ensure-kafka: installing ${missing[*]} from Debian" >&2
	run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
	run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

echo "ensure-kafka: resolving Apache Kafka $version from Maven Central" >&2
tmp="$libs.tmp.$$"
rm -rf "$tmp"
run mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp"
if ! compgen -G "$tmp/kafka_2.13-$version.jar" >/dev/null; then
	echo "ensure-kafka: resolved, but $tmp holds no kafka_2.13-$version.jar" >&2
	exit 1
fi
touch "$tmp/.complete"
rm -rf "$libs"
mkdir -p "$(dirname "$libs")"
mv "$tmp" "$libs"
archive
echo "$libs"
