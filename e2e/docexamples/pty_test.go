//go:build linux

package docexamples

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// terminal is a pseudo-terminal whose output is collected: blocks write to
// it as to a user's terminal, so kcat and the like flush every line as they
// do there (to a file or pipe they buffer until they exit).
type terminal struct {
	master, slave *os.File

	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func openTerminal() (*terminal, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var unlock int32
	var n uint32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		m.Close()
		return nil, fmt.Errorf("unlock pty: %w", err)
	}
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		m.Close()
		return nil, fmt.Errorf("pty number: %w", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		return nil, err
	}
	t := &terminal{master: m, slave: s, done: make(chan struct{})}
	go t.copy()
	return t, nil
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// copy collects the output until every writer closed the terminal (EIO).
func (t *terminal) copy() {
	defer close(t.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := t.master.Read(buf)
		t.mu.Lock()
		t.out.Write(bytes.ReplaceAll(buf[:n], []byte("\r\n"), []byte("\n")))
		t.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// String returns the output so far.
func (t *terminal) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// Close closes both ends; output still buffered in the terminal is lost.
func (t *terminal) Close() error {
	t.slave.Close()
	return t.master.Close()
}

var _ io.Closer = (*terminal)(nil)
