// Package docexamples runs the shell examples of README.md and docs/*.md
// as written, so that a user who pastes them gets what the text says.
//
// Every fenced block marked sh, bash, shell or console is an example and
// must be classified by an HTML comment on the line directly above its
// opening fence (TestClassified fails otherwise, without services):
//
//	<!-- example: embedded -->          run against `delayd --embedded` started by the test
//	<!-- example: stack -->             run against a delayd on the shared local stack started by the test
//	<!-- example: stack-services -->    run against the shared stack's services; the block starts delayd itself
//	<!-- example: embedded sequence NAME -->   (or stack, stack-services) blocks of one story:
//	                                    one delayd, run in document order (README.md, then docs/*.md by name)
//	<!-- example: not run — REASON -->  never run; the reason is printed
//
// Comments on the lines directly below the closing fence state what the
// block prints; its standard output and error together must match every
// regular expression (Go syntax):
//
//	<!-- expect: REGEX -->              once the block has exited with 0
//	<!-- expect within 30s: REGEX -->   polled: the block runs until its output
//	                                    matches (a consumer that runs until Ctrl-C is
//	                                    then stopped) or, when it exits without a
//	                                    match, runs again, until 30 s have passed
//	<!-- expect new within 60s: REGEX -->
//	                                    only matches beyond those of a run of the block
//	                                    before its sequence began count: for a topic of
//	                                    the shared stack read from the beginning, where
//	                                    earlier runs left the same line
//
// TestExamples runs each runnable block with `bash -euo pipefail` in a
// scratch directory, with the delayd and delayctl built from this tree
// first on PATH. Nothing in a block's text is substituted except the
// documented addresses below, and only when the documented port is taken
// (the shared stack holds 9092 and 6379, so embedded mode always moves
// them); each rewrite is logged:
//
//	127.0.0.1:9092 127.0.0.1:6379   embedded: the embedded Kafka and Redis
//	127.0.0.1:9464 127.0.0.1:8080   delayd's --http and --api
//
// Each block also gets the DELAYQ_* variables of its delayd in its
// environment (DELAYQ_BROKERS, DELAYQ_REDIS, DELAYQ_HBASE_ZK, and on the
// stack DELAYQ_PREFIX and DELAYQ_TABLE of a test-only prefix and table,
// dropped afterwards), so delayctl's defaults reach it; a block that starts
// delayd itself (stack-services) also gets DELAYQ_HTTP and DELAYQ_API.
// Processes a block leaves in the background are stopped when its
// sequence ends.
//
// Blocks need bash, curl and kcat (Debian's kcat, installed by
// deploy/local/tools); stack blocks need the local stack. A missing one
// fails the test under CI=true and skips it otherwise.
package docexamples
