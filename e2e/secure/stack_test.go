package secure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/topics"
)

// The private stack's ports: none is the shared stack's, e2e/fault's or
// e2e/cluster's (29092/29093).
const (
	kafkaPort      = 29292 // SASL_SSL, the only client listener
	controllerPort = 29293
	internalPort   = 29294 // PLAINTEXT inter-broker listener: the tests' observer
	redisPort      = 26379 // TLS only, client certificate required
)

// private is the package's secured Kafka and Redis (HBase is the shared
// stack's).
var private = &e2etest.PrivateStack{Name: "e2e-secure", Services: []string{"kafka", "redis"}, Env: []string{
	"SECURE=1",
	"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
	"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
	"KAFKA_INTERNAL_PORT=" + strconv.Itoa(internalPort),
	"REDIS_PORT=" + strconv.Itoa(redisPort),
	"KAFKA_HEAP=384m",
}}

func TestMain(m *testing.M) {
	code := e2etest.MainPrivate(m, private)
	if ctlBin != "" {
		os.RemoveAll(filepath.Dir(ctlBin))
	}
	os.Exit(code)
}

var addr = e2etest.Addr

// secured is what a client of the private stack needs: the files and
// passwords deploy/local/secure.sh made.
type secured struct {
	dir string // $DELAYQ_LOCAL_DIR/secure
}

// stack returns the test's Env and the stack's secrets, starting the
// private stack on first use. The Env's brokers are the internal
// PLAINTEXT listener, where the harness collects as a super user; delayd,
// delayctl, the Go client and the workload producer use the SASL_SSL
// listener. The Env has no Redis: its cleanup would dial without TLS; the
// private Redis goes with the stack.
func stack(t *testing.T) (*e2etest.Env, secured) {
	t.Helper()
	zk := stacktest.HBase(t)
	s := startPrivate(t)
	return e2etest.NewEnv(t, e2etest.Stack{Brokers: []string{addr(internalPort)}, ZK: zk}, "sec"), s
}

// startPrivate starts the private stack on first use
// (PrivateStack.Require).
func startPrivate(t *testing.T) secured {
	t.Helper()
	private.Require(t, "the secure tests start a Kafka and a Redis of their own")
	return secured{dir: filepath.Join(private.Dir(), "secure")}
}

// file returns the path of one of the stack's secure files.
func (s secured) file(name string) string { return filepath.Join(s.dir, name) }

// password returns the SCRAM password of user.
func (s secured) password(t testing.TB, user string) string {
	t.Helper()
	b, err := os.ReadFile(s.file(user + ".password"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// kafkaFlags are the flags of a delayd or delayctl that logs in as user
// with SCRAM-SHA-512 (the password goes through the environment).
func (s secured) kafkaFlags(user string) []string {
	return []string{"--brokers", addr(kafkaPort), "--kafka-tls", "--kafka-tls-ca", s.file("ca.pem"),
		"--kafka-sasl", "scram-sha-512", "--kafka-sasl-user", user}
}

// redisFlags are the flags of a Redis client with mutual TLS.
func (s secured) redisFlags() []string {
	return []string{"--redis", addr(redisPort), "--redis-tls", "--redis-tls-ca", s.file("ca.pem"),
		"--redis-tls-cert", s.file("client.pem"), "--redis-tls-key", s.file("client.key")}
}

// tlsConfig trusts the stack's CA.
func (s secured) tlsConfig(t testing.TB) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(s.file("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("no certificate in ca.pem")
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// mechanism logs in as user with SCRAM-SHA-512.
func (s secured) mechanism(t testing.TB, user string) sasl.Mechanism {
	t.Helper()
	mech, err := scram.Mechanism(scram.SHA512, user, s.password(t, user))
	if err != nil {
		t.Fatal(err)
	}
	return mech
}

// transport is a kafka-go transport that logs in as user on SASL_SSL.
func (s secured) transport(t testing.TB, user string) *kafka.Transport {
	t.Helper()
	return &kafka.Transport{TLS: s.tlsConfig(t), SASL: s.mechanism(t, user)}
}

// produce writes input messages to delay-input over SASL_SSL as user,
// like any outside producer, and fails the test on an error.
func (s secured) produce(t testing.TB, user string, msgs []kafka.Message) {
	t.Helper()
	w := producer.New(producer.Config{Brokers: []string{addr(kafkaPort)}})
	w.Transport = s.transport(t, user)
	defer w.Close()
	for chunk := range slices.Chunk(msgs, 1000) {
		for i := range chunk {
			if chunk[i].Topic == "" {
				chunk[i].Topic = topics.Input
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := w.WriteMessages(ctx, chunk...)
		cancel()
		if err != nil {
			t.Fatalf("produce as %s: %v", user, err)
		}
	}
}

// delayd starts delayd as user delayq (its ACLs only) on the secured
// Kafka and Redis and waits until it is ready.
func (s secured) delayd(t *testing.T, e *e2etest.Env, name string, extra ...string) *e2etest.Delayd {
	t.Helper()
	t.Setenv("DELAYQ_KAFKA_SASL_PASSWORD", s.password(t, "delayq"))
	return e.Start(name, append(append(s.kafkaFlags("delayq"), s.redisFlags()...), extra...)...)
}

// failing is a delayd that is not expected to become ready.
type failing struct {
	http string // its --http address
	log  string // path of its output
	cmd  *exec.Cmd
	done chan struct{}
}

// startFailing runs delayd with the Env's table and prefix, args and the
// Kafka password password, without waiting for /readyz; it is stopped
// when the test ends.
func startFailing(t *testing.T, e *e2etest.Env, password string, args ...string) *failing {
	t.Helper()
	f := &failing{http: e2etest.FreePort(t), log: filepath.Join(t.TempDir(), "delayd.log"), done: make(chan struct{})}
	out, err := os.Create(f.log)
	if err != nil {
		t.Fatal(err)
	}
	f.cmd = exec.Command(e2etest.Binary(t), append([]string{"--hbase-zk", e.ZK, "--table", e.Run,
		"--prefix", e.Run, "--tick", "1s", "--salts", "4", "--http", f.http}, args...)...)
	f.cmd.Env = append(os.Environ(), "DELAYQ_KAFKA_SASL_PASSWORD="+password)
	f.cmd.Stdout, f.cmd.Stderr = out, out
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.cmd.Wait(); out.Close(); close(f.done) }()
	// A graceful stop leaves the consumer groups it may have joined.
	t.Cleanup(func() {
		f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.done:
		case <-time.After(30 * time.Second):
			f.cmd.Process.Kill()
			<-f.done
		}
		if t.Failed() {
			t.Logf("delayd log %s:\n%s", f.log, f.logs())
		}
	})
	return f
}

// logs returns what the delayd wrote so far.
func (f *failing) logs() string {
	b, _ := os.ReadFile(f.log)
	return string(b)
}
