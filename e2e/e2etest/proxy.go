package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is a fault-injecting TCP proxy (toxiproxy's, run in the test
// process) between delayd and one dependency: it forwards Listen to
// Upstream until a toxic is added.
type Proxy struct {
	Name             string
	Listen, Upstream string
	p                *toxiproxy.Proxy
}

// toxiServer is the toxiproxy server the proxies of a test binary share;
// its HTTP API is not started.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())

// StartProxy listens on listen and forwards every connection to upstream;
// it stops when the test ends. A proxy that must outlive one test (it
// carries a private stack's traffic) is started with tb == nil and never
// stopped.
func StartProxy(tb testing.TB, name, listen, upstream string) (*Proxy, error) {
	p := &Proxy{Name: name, Listen: listen, Upstream: upstream, p: toxiproxy.NewProxy(toxiServer, name, listen, upstream)}
	if err := p.p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s %s→%s: %w", name, listen, upstream, err)
	}
	if tb != nil {
		tb.Cleanup(p.p.Stop)
	}
	return p, nil
}

// The kinds of network fault a Proxy injects.
const (
	Latency   = "latency"    // every answer waits Amount ms more
	BlackHole = "timeout"    // nothing passes either way; connections close when it ends
	Reset     = "reset_peer" // every connection that carries data is reset (TCP RST)
)

// Toxic is one fault on a proxy, named so that it can be removed.
type Toxic struct {
	Name   string
	Kind   string // Latency, BlackHole or Reset
	Amount int64  // Latency: the added milliseconds
}

// streams returns the directions toxic kind applies to: a black hole
// drops both ways, latency delays the answers, a reset hits a connection
// on its first answer.
func streams(kind string) []string {
	if kind == BlackHole {
		return []string{"upstream", "downstream"}
	}
	return []string{"downstream"}
}

// Add starts toxic t on every connection, present and future.
func (p *Proxy) Add(t Toxic) error {
	for _, stream := range streams(t.Kind) {
		attrs := map[string]int64{}
		switch t.Kind {
		case Latency:
			attrs["latency"] = t.Amount
		case BlackHole, Reset:
			attrs["timeout"] = 0 // a black hole never closes; a reset is at once
		default:
			return fmt.Errorf("proxy %s: unknown toxic kind %q", p.Name, t.Kind)
		}
		body, err := json.Marshal(map[string]any{"name": t.Name + "-" + stream, "type": t.Kind, "stream": stream, "attributes": attrs})
		if err != nil {
			return err
		}
		if _, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("proxy %s: add %s: %w", p.Name, t.Name, err)
		}
	}
	return nil
}

// Remove ends toxic t (added by Add).
func (p *Proxy) Remove(t Toxic) error {
	for _, stream := range streams(t.Kind) {
		if err := p.p.Toxics.RemoveToxic(context.Background(), t.Name+"-"+stream); err != nil {
			return fmt.Errorf("proxy %s: remove %s: %w", p.Name, t.Name, err)
		}
	}
	return nil
}
