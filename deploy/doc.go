// Package deploy holds what runs delayq's stack outside the Go code: the
// local real stack without Docker (deploy/local/stack and the Maven POMs
// that pin the Kafka and HBase jars), the HBase image that docker-compose.yml
// builds from the same jars (deploy/hbase), and stacktest, which hands the
// local stack's addresses to integration tests.
//
// The Go code here only checks that docker-compose.yml stays in step with
// deploy/local: same services, versions and ports. No Docker engine runs on
// the build machines, so the compose file is parsed, never started, in tests.
package deploy
