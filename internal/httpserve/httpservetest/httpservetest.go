// Package httpservetest holds checks of HTTP servers over real
// connections, shared by the tests of the packages that serve HTTP.
package httpservetest

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// SlowBody POSTs to http://addr/path a 100-byte body of which it sends 8
// bytes, one every interval, and returns how long after the request began
// the server closed the connection, and how many body bytes it sent. It
// fails the test when the connection is still open after 8 × interval +
// 10 s.
func SlowBody(t testing.TB, addr, path string, interval time.Duration) (time.Duration, int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", path, addr)
	closed := make(chan time.Time, 1)
	go func() {
		c.SetReadDeadline(start.Add(8*interval + 10*time.Second))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			closed <- time.Time{}
			return
		}
		closed <- time.Now()
	}()
	sent, got := 0, false
	var at time.Time
trickle:
	for ; sent < 8; sent++ {
		if _, err := c.Write([]byte{'{'}); err != nil {
			break
		}
		select {
		case at = <-closed:
			got = true
			break trickle
		case <-time.After(interval):
		}
	}
	if !got {
		at = <-closed
	}
	if at.IsZero() {
		t.Fatalf("POST %s: connection still open %v after a slow body began", path, time.Since(start))
	}
	return at.Sub(start), sent
}
