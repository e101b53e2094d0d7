package daemon

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/api"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// newAPI returns the HTTP API role over store (its task states, when it
// keeps id rows) and a Go client of its own on the brokers, and the
// client's Close.
func (d *Daemon) newAPI(store Store, decode payload.DecodeConfig) (func(context.Context) error, func() error, error) {
	// Ids the API makes must not collide with another instance's: a random
	// snowflake node per process.
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, fmt.Errorf("api: node id: %w", err)
	}
	c, err := delayq.New(delayq.Config{
		Brokers: d.cfg.Brokers,
		TLS:     d.auth.TLS(),
		SASL:    d.auth.SASL(),
		Node:    int64(binary.BigEndian.Uint16(b[:]) % (delayq.MaxNode + 1)),
		Logger:  d.opts.Logger,
		// The client refuses what ingest would: the limits are delayd's.
		MaxDelay: d.cfg.MaxDelay,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("api: client: %w", err)
	}
	block := d.cfg.MaxDelay + d.cfg.Retention // how long a cancel by id alone blocks its id, as ingest counts it
	if block < 0 {
		block = math.MaxInt64
	}
	states := storeStates{store, block}
	loopback := httpserve.Loopback(d.cfg.API)
	if d.cfg.APIToken == "" && !loopback { // Validate let it through: --api-insecure
		d.log.Warn("api open to whoever reaches it: --api-insecure on an address other than loopback", "api", d.cfg.API)
	}
	srv, err := api.New(api.Config{
		Addr: d.cfg.API, Listener: d.apiLn, Token: d.cfg.APIToken, LocalHosts: d.cfg.APIToken == "" && loopback,
		Decode: decode, Rate: d.cfg.APIRate, Serve: d.cfg.Serve, Topics: d.topics,
		Logger: d.opts.Logger, Registerer: d.reg,
	}, c, states)
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return srv.Run, c.Close, nil
}

// storeStates looks task states up in the payload store; block is
// --max-delay + --retention, how long a cancel by id alone blocks its id.
type storeStates struct {
	s     Store
	block time.Duration
}

func (s storeStates) State(ctx context.Context, id string) (payload.TaskState, error) {
	return payload.StateWith(ctx, s.s, id, time.Now(), s.block)
}

// List lists the tasks of the payload store (find.List); both stores scan
// from a row.
func (s storeStates) List(ctx context.Context, q find.Query) (find.Page, error) {
	return find.List(ctx, s.s, q, time.Now())
}
