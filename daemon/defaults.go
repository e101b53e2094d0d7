package daemon

import (
	"reflect"
	"slices"

	"github.com/delayq/delayq/api"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/repair"
	"github.com/delayq/delayq/scanner"
	"github.com/delayq/delayq/zset"
)

// DefaultConfig is the one source of delayd's defaults: the Config of a
// delayd started without flags. cmd/delayd binds its flags to its fields
// (so each flag's default is the value here), and New fills every zero
// field of a Config from it, except the booleans: Console is on here, as
// in delayd, but stays off in a zero Config. Its values are the defaults
// docs/ARCHITECTURE.md "Interfaces" lists (cmd/delayd's
// TestDefaultsMatchInterfaces reads that table).
func DefaultConfig() Config {
	return Config{
		Brokers:        []string{admin.DefaultBroker},
		Redis:          zset.DefaultAddr,
		HBaseZK:        hbase.DefaultZK,
		HBaseZKRoot:    hbase.DefaultZKRoot,
		Table:          hbase.DefaultTable,
		Prefix:         zset.DefaultPrefix,
		Roles:          slices.Clone(AllRoles),
		Tick:           DefaultTick,
		HTTP:           DefaultHTTP,
		MaxDelay:       payload.DefaultMaxDelay,
		Salts:          hbase.DefaultSalts,
		Segment:        zset.DefaultSegment,
		Shards:         zset.DefaultShards,
		ZsetFill:       zset.DefaultFill,
		Partitions:     admin.DefaultPartitions,
		ScanWorkers:    scanner.DefaultWorkers,
		ScanCoalesce:   scanner.DefaultCoalesce,
		ScanPrefetch:   scanner.DefaultPrefetch,
		IngestBatch:    ingest.DefaultBatchSize,
		Retention:      hbase.DefaultRetention,
		SlowRate:       ingest.DefaultSlowRate,
		RepairInterval: repair.DefaultInterval,
		RepairLookback: repair.DefaultLookback,
		GroupPrefix:    DefaultGroupPrefix,
		Console:        true,
		API:            api.DefaultAddr,
		APIRate:        api.DefaultRate,
	}
}

// setDefaults fills every zero field but the booleans from DefaultConfig.
func (c *Config) setDefaults() {
	def := reflect.ValueOf(DefaultConfig())
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() != reflect.Bool && f.IsZero() {
			f.Set(def.Field(i))
		}
	}
}
