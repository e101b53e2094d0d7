#!/bin/sh
# Tests of the Java client (clients/java): `mvn verify` runs the unit
# tests and the shared wire vectors of testdata/wire (surefire), then the
# integration test on the local stack (failsafe, RealStackIT: it builds
# delayd with go, takes the shared-stack lock $TMPDIR/delayq-e2e.lock with
# flock(1) only while its delayd runs, and is skipped without the stack,
# failed under CI=true). Run from anywhere; `make test` runs it after the
# Python client's tests. The first run downloads kafka-clients, JUnit and
# Maven's plugins into ~/.m2; later runs are offline (-o). Needs JDK 17+
# and Maven; extra arguments go to mvn.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
m2=${MAVEN_REPO:-$HOME/.m2/repository}
offline=
if [ -d "$m2/org/apache/kafka/kafka-clients/4.3.1" ] &&
	[ -d "$m2/org/apache/maven/plugins/maven-failsafe-plugin/3.5.4" ] &&
	[ -d "$m2/org/junit/jupiter/junit-jupiter/5.14.4" ]; then
	offline=-o
fi
exec mvn -B -q $offline verify "$@"
