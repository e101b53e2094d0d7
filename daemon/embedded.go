package daemon

import (
	"context"
	"fmt"
	"net"

	"github.com/alicebob/miniredis/v2"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/payload"
)

// Embedded runs delayd with in-process backends: a Kafka (franz-go's kfake)
// served on Config.Brokers[0], a Redis (miniredis) served on Config.Redis,
// and the in-memory payload store (opts.Store, when a test gives one: it
// must start empty). Any Kafka client can connect to it. It
// keeps nothing across restarts. banner, when non-nil, is called once the
// backends listen, with the addresses actually served.
func Embedded(ctx context.Context, cfg Config, opts Options, banner func(brokers, redis string)) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil { // before anything listens
		return err
	}
	if cfg.Kafka != (kafkaauth.Config{}) {
		return fmt.Errorf("%w: --kafka-tls*, --kafka-sasl*: embedded mode serves plaintext Kafka without SASL (%s)", ErrConfig, cfg.Kafka)
	}
	if len(cfg.Brokers) != 1 {
		return fmt.Errorf("%w: --brokers: embedded mode serves one address, got %d", ErrConfig, len(cfg.Brokers))
	}
	if cfg.RedisMinReplicas > 0 {
		return fmt.Errorf("%w: --redis-min-replicas %d: the embedded Redis has no replicas", ErrConfig, cfg.RedisMinReplicas)
	}
	kafkaAddr, err := listenable("--brokers", cfg.Brokers[0])
	if err != nil {
		return err
	}
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, kafkaAddr) }),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.Partitions),
	)
	if err != nil {
		return fmt.Errorf("--brokers %s: embedded Kafka: %w", kafkaAddr, err)
	}
	defer cluster.Close()

	redisAddr, err := listenable("--redis", cfg.Redis)
	if err != nil {
		return err
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr(redisAddr); err != nil {
		return fmt.Errorf("--redis %s: embedded Redis: %w", redisAddr, err)
	}
	defer mr.Close()

	cfg.Brokers = cluster.ListenAddrs()
	cfg.Redis = mr.Addr()
	if opts.Store == nil {
		opts.Store = payload.NewMemory()
	}
	opts.AutoCreateTopics = true
	opts.newIndex = true // a new miniredis beside an empty memory store: no loss to repair
	d, err := New(cfg, opts)
	if err != nil {
		return err
	}
	if err := d.Listen(); err != nil { // a taken --http or --api port, before the banner
		return err
	}
	if banner != nil {
		banner(cfg.Brokers[0], cfg.Redis)
	}
	return d.Run(ctx)
}

// listenable checks that addr is free to listen on, and turns a busy port
// into one clear line that names the flag.
func listenable(flag, addr string) (string, error) {
	ln, err := listen(flag, addr)
	if err != nil {
		return "", err
	}
	a := ln.Addr().String()
	ln.Close()
	return a, nil
}
