package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// alertWait is how long Explain reads a fresh TLS session for the alert
// of a server that refuses it.
const alertWait = time.Second

// Explain returns err, a failed command of rdb, with the cause a TLS
// server gave for ending the session, when there is one. In TLS 1.3 the
// client's side of the handshake completes before the server has checked
// the client's certificate: a server that wants one (Redis with
// tls-auth-clients yes) sends its alert "certificate required" afterwards
// and closes, and a client that writes its command first sees only a
// reset connection. So for an error that is no answer of Redis, Explain
// opens one more session the way rdb does and reads it briefly: an alert
// is the cause. Errors of a Redis that answered, errors that name the
// alert already, and a session that stays open leave err as it is.
func Explain(ctx context.Context, rdb redis.UniversalClient, err error) error {
	var answered redis.Error
	if err == nil || errors.As(err, &answered) || ctx.Err() != nil {
		return err
	}
	if alert := tlsAlert(ctx, rdb); alert != nil && !strings.Contains(err.Error(), alert.Error()) {
		return fmt.Errorf("redis ended the TLS session: %v (%w)", alert, err)
	}
	return err
}

// tlsAlert dials rdb's first address over TLS as rdb does and returns the
// alert the server sends within alertWait, if any.
func tlsAlert(ctx context.Context, rdb redis.UniversalClient) error {
	var (
		dial func(ctx context.Context, network, addr string) (net.Conn, error)
		addr string
	)
	switch c := rdb.(type) {
	case *redis.Client: // single, or Sentinel: its dialer finds the master
		o := c.Options()
		if o.TLSConfig == nil || o.Dialer == nil {
			return nil
		}
		dial, addr = o.Dialer, o.Addr
	case *redis.ClusterClient:
		o := c.Options()
		if o.TLSConfig == nil || len(o.Addrs) == 0 {
			return nil
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: o.DialTimeout}, Config: o.TLSConfig}
		dial, addr = d.DialContext, o.Addrs[0]
	default:
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil // not reached, or refused in the handshake: err says so already
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(alertWait))
	_, err = conn.Read(make([]byte, 1))
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" { // crypto/tls's alert from the peer
		return err
	}
	return nil
}
