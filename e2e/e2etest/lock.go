package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SharedLockPath is the file that serializes the tests that run delayd on
// the shared stack (e2e, e2e/docexamples): every delayd joins the fixed
// consumer groups delayq-ingest and delayq-scanner on the shared
// delay-input, so two packages' delayd running at once (go test runs
// packages in parallel) would take each other's tasks into their own table.
// Each such test holds it (LockShared), not the whole package: the tests
// of e2e and e2e/docexamples take turns, and e2e's embedded tests run
// while the other package holds it.
var SharedLockPath = filepath.Join(os.TempDir(), "delayq-e2e.lock")

// The lock is taken once per process; nested holders (a subtest of a test
// that holds it) count.
var shared struct {
	sync.Mutex
	held int
	f    *os.File
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
// every 30 s while another process holds it; a process that holds it
// already only counts one more holder.
func lockShared(waiting func(time.Duration)) (func(), error) {
	shared.Lock()
	defer shared.Unlock()
	release := func() {
		shared.Lock()
		defer shared.Unlock()
		if shared.held--; shared.held == 0 {
			shared.f.Close()
			shared.f = nil
		}
	}
	if shared.held > 0 {
		shared.held++
		return release, nil
	}
	f, err := os.OpenFile(SharedLockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("shared stack lock: %w", err)
	}
	start := time.Now()
	next := start.Add(30 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			shared.held, shared.f = 1, f
			return release, nil
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
