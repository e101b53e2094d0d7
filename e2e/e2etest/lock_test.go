package e2etest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLockSharedNests: a test that holds the lock and a subtest that takes
// it again do not wait for each other; the file is free for another
// holder once both ended, and held by this process until then.
func TestLockSharedNests(t *testing.T) {
	old := SharedLockPath
	SharedLockPath = filepath.Join(t.TempDir(), "lock")
	t.Cleanup(func() { SharedLockPath = old })
	other := func() bool { // can another open file description take it?
		f, err := os.OpenFile(SharedLockPath, os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	t.Run("outer", func(t *testing.T) {
		LockShared(t)
		t.Run("inner", func(t *testing.T) {
			LockShared(t)
			if other() {
				t.Error("the lock is free while two holders hold it")
			}
		})
		if other() {
			t.Error("the lock is free while the outer holder holds it")
		}
	})
	if !other() {
		t.Error("the lock is still held after both holders ended")
	}
}
