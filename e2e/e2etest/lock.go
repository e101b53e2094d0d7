package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SharedLockPath is the file that serializes the test packages that run
// delayd on the shared stack (e2e, e2e/docexamples): every delayd joins the
// fixed consumer groups delayq-ingest and delayq-scanner on the shared
// delay-input, so two packages' delayd running at once (go test runs
// packages in parallel) would take each other's tasks into their own table.
var SharedLockPath = filepath.Join(os.TempDir(), "delayq-e2e.lock")

// MainShared is Main for a package whose tests run delayd on the shared
// stack: it holds SharedLockPath while the tests run.
func MainShared(m *testing.M) int {
	release, err := lockShared(func(d time.Duration) {
		fmt.Fprintf(os.Stderr, "e2etest: waiting for %s (another package runs delayd on the shared stack), %v so far\n", SharedLockPath, d)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etest:", err)
		return 1
	}
	defer release()
	return Main(m)
}

// LockShared holds SharedLockPath until the test ends.
func LockShared(tb testing.TB) {
	tb.Helper()
	release, err := lockShared(func(d time.Duration) {
		tb.Logf("waiting for %s (another package runs delayd on the shared stack), %v so far", SharedLockPath, d)
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
}

// lockShared takes an exclusive flock on SharedLockPath, calling waiting
// every 30 s while another process holds it.
func lockShared(waiting func(time.Duration)) (func(), error) {
	f, err := os.OpenFile(SharedLockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("shared stack lock: %w", err)
	}
	start := time.Now()
	next := start.Add(30 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("shared stack lock %s: %w", SharedLockPath, err)
		}
		if now := time.Now(); now.After(next) {
			waiting(now.Sub(start).Round(time.Second))
			next = now.Add(30 * time.Second)
		}
		time.Sleep(time.Second)
	}
}
