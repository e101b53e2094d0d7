#!/bin/sh
# Tests of the Java client (clients/java): `mvn verify` runs the unit
# tests and the shared wire vectors of testdata/wire (surefire), then the
# integration tests (failsafe): RealStackIT on the shared local stack (it
# builds delayd with go, takes the shared-stack lock $TMPDIR/delayq-e2e.lock
# with flock(1) only while its delayd runs, and is skipped without the
# stack, failed under CI=true), and with JAVA_SECURE=1 SecureStackIT: this
# script then starts a private SECURE=1 Kafka and Redis (SASL_SSL with
# SCRAM, TLS; ports 46092-46094 and 46079, data in .local/java-secure,
# HBase the shared stack's) and removes it afterwards. Run from anywhere;
# `make test` runs it after the Python client's tests. The first run
# downloads kafka-clients, JUnit and Maven's plugins into ~/.m2; later
# runs are offline (-o). Needs JDK 17+ and Maven; extra arguments go to mvn.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
m2=${MAVEN_REPO:-$HOME/.m2/repository}
offline=
if [ -d "$m2/org/apache/kafka/kafka-clients/4.3.1" ] &&
	[ -d "$m2/org/apache/maven/plugins/maven-failsafe-plugin/3.5.4" ] &&
	[ -d "$m2/org/junit/jupiter/junit-jupiter/5.14.4" ]; then
	offline=-o
fi
if [ "${JAVA_SECURE:-}" != 1 ]; then
	exec mvn -B -q $offline verify "$@"
fi

# The private secured stack of SecureStackIT.
secure_stack() {
	env DELAYQ_LOCAL_DIR="$root/.local/java-secure" SECURE=1 KAFKA_PORT=46092 KAFKA_CONTROLLER_PORT=46093 \
		KAFKA_INTERNAL_PORT=46094 REDIS_PORT=46079 KAFKA_HEAP=384m "$root/deploy/local/stack" "$@"
}
teardown() {
	secure_stack stop --kill kafka >/dev/null 2>&1 || true
	secure_stack stop --kill redis >/dev/null 2>&1 || true
	secure_stack down --wipe >/dev/null 2>&1 || true
}
teardown
trap teardown EXIT
trap 'exit 1' INT TERM
# Kafka exits on EADDRINUSE when a port still has sockets in TIME-WAIT
# (a broker killed less than a minute ago) or a client connection of the
# busy machine holds it (the ports lie in Linux's ephemeral range): wait
# for the ports to be quiet, and try a start that fails again, three times.
quiet() {
	i=0
	while [ $i -lt 120 ] && ss -tanH '( sport = :46092 or sport = :46093 or sport = :46094 or sport = :46079 )' | grep -q .; do
		sleep 1
		i=$((i + 1))
	done
}
for try in 1 2 3; do
	quiet
	if secure_stack start kafka && secure_stack start redis; then
		break
	fi
	[ "$try" -lt 3 ] || exit 1
	echo "test.sh: the private stack did not start (try $try of 3); wiping it and trying again" >&2
	teardown
done
rc=0
DELAYQ_JAVA_SECURE_DIR="$root/.local/java-secure/secure" mvn -B -q $offline verify "$@" || rc=$?
exit $rc
