package e2etest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// ProxiedStack is a PrivateStack whose Kafka, Redis and HBase delayd
// reaches through fault-injecting proxies (e2e/netfault, e2e/soak). Its
// ports are Base plus fixed offsets:
//
//	Kafka          Base+92 (the test's clients), controller Base+93,
//	               the PROXIED listener Base+94, its proxy Base+95
//	Redis          Base+79, its proxy Base+80
//	HBase ZK       Base+81, its proxy Base+82
//	HBase master   Base+0 (not proxied: delayd only creates its table there)
//	region server  127.0.0.1:Base+20, its proxy 127.0.0.2:Base+20
//
// Kafka advertises the proxy's address on the PROXIED listener, and the
// region server registers itself as 127.0.0.2 (deploy/local/stack:
// KAFKA_PROXIED_PORT, HBASE_RS_ADVERTISED_HOST), so the connections their
// metadata leads to go through the proxies too. The region server's proxy
// carries every client's traffic to it, the test's own and the HBase
// master's included; the test's Kafka and Redis clients go direct.
type ProxiedStack struct {
	Name string
	Base int
	// Env adds variables to the stack's (heaps).
	Env []string

	once    sync.Once
	err     error
	private *PrivateStack
	// The proxies by dependency: "kafka", "redis", "hbase" (ZooKeeper
	// and the region server).
	proxies map[string][]*Proxy
}

func (p *ProxiedStack) port(off int) int { return p.Base + off }

// Private returns the stack under the proxies (for stop and start).
func (p *ProxiedStack) Private() *PrivateStack {
	p.once.Do(func() {
		p.private = &PrivateStack{Name: p.Name, Env: append([]string{
			"KAFKA_PORT=" + strconv.Itoa(p.port(92)),
			"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(p.port(93)),
			"KAFKA_PROXIED_PORT=" + strconv.Itoa(p.port(94)),
			"KAFKA_PROXIED_ADVERTISED=" + Addr(p.port(95)),
			"REDIS_PORT=" + strconv.Itoa(p.port(79)),
			"HBASE_ZK_PORT=" + strconv.Itoa(p.port(81)),
			"HBASE_MASTER_PORT=" + strconv.Itoa(p.port(0)),
			"HBASE_REGIONSERVER_PORT=" + strconv.Itoa(p.port(20)),
			"HBASE_RS_ADVERTISED_HOST=127.0.0.2",
		}, p.Env...)}
		p.err = p.startProxies()
	})
	return p.private
}

// startProxies starts the proxies for the life of the test binary: HBase
// needs its region server's before it starts.
func (p *ProxiedStack) startProxies() error {
	p.proxies = map[string][]*Proxy{}
	for _, x := range []struct {
		dep, name, listen, upstream string
	}{
		{"kafka", "kafka", Addr(p.port(95)), Addr(p.port(94))},
		{"redis", "redis", Addr(p.port(80)), Addr(p.port(79))},
		{"hbase", "zookeeper", Addr(p.port(82)), Addr(p.port(81))},
		{"hbase", "regionserver", "127.0.0.2:" + strconv.Itoa(p.port(20)), Addr(p.port(20))},
	} {
		px, err := StartProxy(nil, p.Name+"-"+x.name, x.listen, x.upstream)
		if err != nil {
			return err
		}
		p.proxies[x.dep] = append(p.proxies[x.dep], px)
	}
	return nil
}

// Require starts the proxies and the stack on first use
// (PrivateStack.Require) and returns the addresses the test's clients use
// and those delayd is given (Env.Via).
func (p *ProxiedStack) Require(t testing.TB, short string) (direct, via Stack) {
	t.Helper()
	priv := p.Private()
	if p.err != nil {
		t.Fatalf("%s: %v", p.Name, p.err)
	}
	priv.Require(t, short)
	direct = Stack{Brokers: []string{Addr(p.port(92))}, Redis: Addr(p.port(79)), ZK: Addr(p.port(81))}
	via = Stack{Brokers: []string{Addr(p.port(95))}, Redis: Addr(p.port(80)), ZK: Addr(p.port(82))}
	return direct, via
}

// Inject starts toxic t on every proxy of dependency dep ("kafka",
// "redis" or "hbase").
func (p *ProxiedStack) Inject(dep string, t Toxic) error {
	pxs, ok := p.proxies[dep]
	if !ok {
		return fmt.Errorf("%s: no proxy for %q", p.Name, dep)
	}
	for _, px := range pxs {
		if err := px.Add(t); err != nil {
			return err
		}
	}
	return nil
}

// Heal removes toxic t from every proxy of dep.
func (p *ProxiedStack) Heal(dep string, t Toxic) error {
	var first error
	for _, px := range p.proxies[dep] {
		if err := px.Remove(t); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Teardown removes the stack (PrivateStack.Teardown); the proxies end
// with the test binary.
func (p *ProxiedStack) Teardown() error {
	if p.private == nil {
		return nil
	}
	return p.private.Teardown()
}
