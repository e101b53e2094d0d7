package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/internal/redisconn"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/kafkaauth"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/topics"
)

// pollEvery is how often the run samples delayd's counters while it waits.
const pollEvery = 50 * time.Millisecond

// Run runs the baseline (when asked) and then the delayq measurement, and
// returns the report. The delayd at cfg.Delayd must be running and ready.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	auth, err := cfg.Kafka.Load()
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	cfg.auth = auth
	rep := &Report{
		Run: cfg.Run, Started: time.Now().UTC(), Tasks: cfg.Tasks, Payload: cfg.Payload, Rate: cfg.Rate,
		Delays: cfg.delays(), Topic: cfg.Topic, IDs: cfg.IDs, DelaydHTTP: cfg.Delayd,
	}
	if err := ready(ctx, cfg.Delayd); err != nil {
		return nil, err
	}
	rc := cfg.RedisConn
	rc.Addrs = redisconn.SplitAddrs(cfg.Redis)
	rdb, err := redisconn.New(rc)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rdb.Close()
	if err := redisconn.Ping(ctx, rdb); err != nil {
		return nil, fmt.Errorf("load: redis %s: %w", rc, err)
	}
	var topics []string
	defer func() {
		if !cfg.KeepTopics && len(topics) > 0 {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := deleteTopics(dctx, cfg.Brokers, cfg.auth, topics); err != nil {
				fmt.Fprintf(cfg.Progress, "delete topics: %v\n", err)
			}
		}
	}()

	if cfg.Baseline {
		bl, created, err := runBaseline(ctx, &cfg)
		topics = append(topics, created...)
		if err != nil {
			return rep, fmt.Errorf("load: baseline: %w", err)
		}
		rep.Baseline = bl
	}
	topics = append(topics, cfg.Topic)
	d, err := runDelayq(ctx, &cfg, rdb)
	rep.Delayq = d
	if err != nil {
		return rep, fmt.Errorf("load: delayq: %w", err)
	}
	if rep.Baseline != nil {
		rep.Ratios = &Ratios{
			Submit:   ratio(d.SubmitRate, rep.Baseline.CopyRate),
			Delivery: ratio(d.DeliveryRate, rep.Baseline.DrainRate),
		}
	}
	if cfg.Cleanup {
		n, err := DeletePrefix(context.WithoutCancel(ctx), rdb, cfg.Prefix)
		fmt.Fprintf(cfg.Progress, "cleanup: unlinked %d redis keys under %s:* (err %v)\n", n, cfg.Prefix, err)
	}
	return rep, nil
}

// runDelayq submits the tasks, waits until delayd accepted them all, takes
// the Redis figures, then (unless NoDeliver) waits for the deliveries.
func runDelayq(ctx context.Context, cfg *Config, rdb redis.UniversalClient) (*Delayq, error) {
	if err := admin.Ensure(ctx, cfg.Brokers, cfg.auth, []admin.Spec{{Name: cfg.Topic, Partitions: cfg.Partitions}}); err != nil {
		return nil, err
	}
	d := &Delayq{Burst: cfg.Burst}
	before, err := Scrape(ctx, metricsClient, cfg.Delayd, metricAccepted, metricDelivered, metricCPU)
	if err != nil {
		return nil, err
	}
	usedBefore, err := UsedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	redisBefore, err := ReadRedisUsage(ctx, rdb)
	if err != nil {
		return nil, err
	}

	stopDispatch := sampleDispatch(ctx, cfg.Delayd)
	defer func() {
		if stopDispatch != nil {
			d.Dispatch = stopDispatch()
		}
	}()

	start := time.Now()
	tally := NewTally(cfg.Tasks)
	src, err := newTaskSource(cfg, start, tally)
	if err != nil {
		return nil, err
	}
	cctx, stopCollect := context.WithCancel(ctx)
	waitCollect := collect(cctx, cfg.Brokers, cfg.auth, cfg.Topic, cfg.Partitions, func(m kafka.Message, seen time.Time) {
		tally.Add(delivery(m, seen))
	})
	defer func() { stopCollect(); waitCollect() }()

	var sent atomic.Int64
	var accepted atomic.Int64
	stopProgress := progress(cfg, start, func() string {
		o := tally.Outcome()
		return fmt.Sprintf("delayq: produced %d/%d  accepted %d  delivered %d  duplicates %d  early %d",
			sent.Load(), cfg.Tasks, accepted.Load(), o.Delivered, o.Duplicates, o.Early)
	})
	defer stopProgress()

	w := producer.New(producer.Config{Brokers: cfg.Brokers, Auth: cfg.auth})
	pStart, pEnd, err := produce(ctx, w, cfg.Tasks, cfg.Rate, cfg.Producers, func(seq int, now time.Time) kafka.Message {
		return src.task(topics.Input, seq, now)
	}, &sent)
	w.Close()
	if err != nil {
		return d, err
	}
	d.ProduceSeconds = pEnd.Sub(pStart).Seconds()
	d.ProduceRate = float64(cfg.Tasks) / d.ProduceSeconds

	// Submit: until delayd accepted every task (ingest lag back to zero).
	now, err := awaitAccepted(ctx, cfg, before, &accepted)
	if err != nil {
		return d, err
	}
	acceptedAt := time.Now()
	d.Accepted = int(accepted.Load())
	d.SubmitSeconds = acceptedAt.Sub(pStart).Seconds()
	d.SubmitRate = float64(d.Accepted) / d.SubmitSeconds
	d.CPU.SubmitSeconds = now[metricCPU] - before[metricCPU]
	d.AcceptedBeforeDue = !cfg.Burst || acceptedAt.UnixMilli() < tally.FirstDue()

	redisAccepted, err := ReadRedisUsage(ctx, rdb)
	if err != nil {
		return d, err
	}
	rf, err := redisFigures(ctx, rdb, cfg.Prefix, usedBefore)
	if err != nil {
		return d, err
	}
	d.Redis = rf
	fmt.Fprintf(cfg.Progress, "all %d accepted after %.2fs; redis %.1f B/pending (%d pending in %d zsets)\n",
		d.Accepted, d.SubmitSeconds, rf.BytesPerPending, rf.Pending, rf.Zsets)

	d.Awaited = !cfg.NoDeliver
	if d.Awaited {
		deadline := time.UnixMilli(tally.LastDue()).Add(cfg.Grace)
		for tally.Delivered() < cfg.Tasks && time.Now().Before(deadline) {
			if !sleep(ctx, pollEvery) {
				return d, ctx.Err()
			}
		}
		sleep(ctx, cfg.Settle) // late duplicates show up here
	}
	end, err := Scrape(ctx, metricsClient, cfg.Delayd, metricCPU)
	if err != nil {
		return d, err
	}
	d.CPU.TotalSeconds = end[metricCPU] - before[metricCPU]
	d.CPU.DeliverSeconds = d.CPU.TotalSeconds - d.CPU.SubmitSeconds
	d.CPU.PerThousand = d.CPU.TotalSeconds / (float64(cfg.Tasks) / 1000)
	redisEnd, err := ReadRedisUsage(ctx, rdb)
	if err != nil {
		return d, err
	}
	rc := &RedisCPUFigures{}
	rc.SubmitSeconds, rc.SubmitCommands = redisAccepted.Since(redisBefore)
	rc.DeliverSeconds, rc.DeliverCommands = redisEnd.Since(redisAccepted)
	rc.PerThousand = (rc.SubmitSeconds + rc.DeliverSeconds) / (float64(cfg.Tasks) / 1000)
	d.RedisCPU = rc
	d.Dispatch = stopDispatch()
	stopDispatch = nil

	stopCollect()
	waitCollect()
	d.Outcome = tally.Outcome()
	if o := d.Outcome; o.Delivered > 0 {
		first := tally.FirstDue()
		d.DeliverySeconds = float64(o.LastWritten-first) / 1000
		if d.DeliverySeconds > 0 {
			d.DeliveryRate = float64(o.Delivered) / d.DeliverySeconds
		}
	}
	d.samples = tally.Samples()
	d.Bins = LatenessBins(d.samples, defaultBins)
	return d, nil
}

// awaitAccepted scrapes delayd until it accepted every task since the
// scrape before (keeping the count in accepted for the progress line),
// within cfg.AcceptTimeout; it returns the last scrape.
func awaitAccepted(ctx context.Context, cfg *Config, before map[string]float64, accepted *atomic.Int64) (map[string]float64, error) {
	deadline := time.Now().Add(cfg.AcceptTimeout)
	for {
		now, err := Scrape(ctx, metricsClient, cfg.Delayd, metricAccepted, metricDelivered, metricCPU)
		if err != nil {
			return nil, err
		}
		accepted.Store(int64(now[metricAccepted] - before[metricAccepted]))
		if accepted.Load() >= int64(cfg.Tasks) {
			return now, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d tasks accepted after %v", accepted.Load(), cfg.Tasks, cfg.AcceptTimeout)
		}
		if !sleep(ctx, pollEvery) {
			return nil, ctx.Err()
		}
	}
}

// redisFigures takes Redis's memory figures of the pending tasks under
// prefix, used memory before the run given.
func redisFigures(ctx context.Context, rdb redis.UniversalClient, prefix string, usedBefore int64) (*RedisFigures, error) {
	usedAfter, err := UsedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	census, err := Census(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	rf := &RedisFigures{
		UsedBefore: usedBefore, UsedAfter: usedAfter, Pending: census.Members,
		Zsets: census.Zsets, Listpack: census.Listpack, Skiplist: census.Skiplist, MaxMembers: census.MaxMembers,
		KeyBytes: census.Bytes,
	}
	if census.Members > 0 {
		rf.BytesPerPending = float64(usedAfter-usedBefore) / float64(census.Members)
		rf.KeyBytesPerPending = float64(census.Bytes) / float64(census.Members)
	}
	if census.Zsets > 0 {
		rf.MeanMembers = float64(census.Members) / float64(census.Zsets)
	}
	return rf, nil
}

// ready checks that delayd answers /readyz with 200.
func ready(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return fmt.Errorf("load: delayd at %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load: delayd at %s not ready: %s", addr, resp.Status)
	}
	return nil
}

// progress prints line() to cfg.Progress every second until the returned
// function is called.
func progress(cfg *Config, start time.Time, line func() string) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(cfg.Progress, "%6.1fs %s\n", time.Since(start).Seconds(), line())
			}
		}
	}()
	return func() {
		select {
		case <-done:
		default:
			close(done)
		}
		<-stopped
	}
}

// sleep waits d or until ctx ends; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deleteTopics deletes topics the run created.
func deleteTopics(ctx context.Context, brokers []string, auth *kafkaauth.Auth, topics []string) error {
	transport := auth.NewTransport()
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: transport, Timeout: 30 * time.Second}
	res, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics})
	if err != nil {
		return err
	}
	var errs []error
	for t, err := range res.Errors {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}
