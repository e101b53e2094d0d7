package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"

	"github.com/delayq/delayq/internal/retry"
	"github.com/delayq/delayq/payload"
)

// SaltsAttribute is the table attribute (in the table descriptor, shown by
// the HBase shell under METADATA) that records the table's salt count.
const SaltsAttribute = "delayq.salts"

// ErrSaltsMismatch is wrapped by the CreateTable and TableSalts errors that
// say the table was built for another salt count than the configured one.
// Reading or writing it with the wrong count would put rows under rowkeys
// no reader looks at: a process must not start with it.
var ErrSaltsMismatch = errors.New("hbase: salt count mismatch")

// adminPolicy retries an admin call while HBase is starting.
var adminPolicy = retry.Policy{
	Backoff:   retry.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second},
	Permanent: func(err error) bool { return !isStarting(err) },
}

// familyAttributes are the column family's settings beyond gohbase's
// defaults (ROW bloom filter, 64 KiB blocks). Every read is a seek to a
// row: ROW_INDEX_V1 blocks carry an index of their rows, so a seek is a
// binary search, where gohbase's default FAST_DIFF decodes the block from
// its start up to the row (measured: docs/performance.md, "scans instead
// of point Gets").
var familyAttributes = map[string]string{
	"VERSIONS":            "1",
	"DATA_BLOCK_ENCODING": "ROW_INDEX_V1",
}

// CreateTable makes sure table exists for salts salt values: it creates it
// pre-split into one region per salt, with the one column family
// (familyAttributes) and the salt count in the table attribute SaltsAttribute. It is
// idempotent. On an existing table it checks the salt count instead and
// returns an error wrapping ErrSaltsMismatch, naming both counts, when they
// differ. An existing table without the attribute (created before it
// existed) has its salt count derived from its region boundaries when they
// are the pre-split ones; the attribute is then written (a table schema
// change, which reopens the table's regions once). While HBase is still
// starting (master initializing, PleaseHoldException) every call is retried
// with backoff until ctx ends. zkRoot is HBase's znode parent ("" means
// DefaultZKRoot).
func CreateTable(ctx context.Context, zk, zkRoot, table string, salts int) error {
	if salts < 1 || salts > payload.MaxSalts {
		return fmt.Errorf("hbase: create table %s: %w: salts %d out of range 1..%d", table, ErrConfig, salts, payload.MaxSalts)
	}
	a := newAdmin(zk, zkRoot)
	defer a.close()
	created := false
	err := a.do(ctx, "create table", func(ctx context.Context) error {
		ct := hrpc.NewCreateTable(ctx, []byte(table),
			map[string]map[string]string{family: familyAttributes},
			hrpc.SplitKeys(payload.SplitKeys(salts)),
			hrpc.TableAttributes(map[string]string{SaltsAttribute: strconv.Itoa(salts)}))
		switch err := a.ac.CreateTable(ct); {
		case err == nil:
			created = true
			return nil
		case isTableExists(err):
			return nil
		default:
			return err
		}
	})
	if err != nil {
		return fmt.Errorf("hbase: create table %s: %w", table, err)
	}
	if created {
		return nil
	}
	schema, err := a.schema(ctx, table)
	if err != nil {
		return fmt.Errorf("hbase: create table %s: %w", table, err)
	}
	have, recorded, err := a.salts(ctx, table, schema)
	switch {
	case err != nil:
		return fmt.Errorf("hbase: create table %s: %w", table, err)
	case have != 0 && have != salts:
		return mismatch(table, have, salts, recorded)
	case recorded:
		return nil
	}
	if err := a.record(ctx, table, schema, salts); err != nil {
		return fmt.Errorf("hbase: create table %s: record %d salts: %w", table, salts, err)
	}
	return nil
}

// TableSalts returns the salt count of an existing table: its
// SaltsAttribute, or for a table without it the count its pre-split region
// boundaries show, or 0 when they show none. It changes nothing.
func TableSalts(ctx context.Context, zk, zkRoot, table string) (int, error) {
	a := newAdmin(zk, zkRoot)
	defer a.close()
	schema, err := a.schema(ctx, table)
	if err != nil {
		return 0, fmt.Errorf("hbase: salts of %s: %w", table, err)
	}
	n, _, err := a.salts(ctx, table, schema)
	if err != nil {
		return 0, fmt.Errorf("hbase: salts of %s: %w", table, err)
	}
	return n, nil
}

func mismatch(table string, have, want int, recorded bool) error {
	how := "was created with"
	if !recorded {
		how = "is pre-split for"
	}
	return fmt.Errorf("%w: table %s %s %d salts, configured %d: use --salts %d or another table",
		ErrSaltsMismatch, table, how, have, want, have)
}

// admin is a master connection for the table calls. gohbase's admin client
// cannot be closed (its Close panics on a nil channel), so admin dials the
// connections itself and closes them at the end, which ends the region
// client's goroutines.
type admin struct {
	zk    string
	root  string // znode parent; "" means DefaultZKRoot
	conns connTracker
	ac    gohbase.AdminClient
}

func newAdmin(zk, root string) *admin {
	if root == "" {
		root = DefaultZKRoot
	}
	a := &admin{zk: zk, root: root}
	a.ac = gohbase.NewAdminClient(zk,
		gohbase.ZookeeperRoot(root),
		gohbase.Logger(slog.New(slog.DiscardHandler)),
		gohbase.RegionDialer(a.conns.dial))
	return a
}

func (a *admin) close() { a.conns.closeAll() }

func (a *admin) do(ctx context.Context, op string, fn func(context.Context) error) error {
	var stage *retry.Stage // no logs or metrics: CreateTable runs before they exist
	if err := stage.Do(ctx, op, adminPolicy, fn); err != nil {
		return shortError{err}
	}
	return nil
}

// rpcSender is what gohbase's admin client offers beyond AdminClient: it
// sends any master call, here those gohbase has no method for.
type rpcSender interface {
	SendRPC(hrpc.Call) (proto.Message, error)
}

func (a *admin) send(ctx context.Context, op string, call func(context.Context) hrpc.Call) (proto.Message, error) {
	s, ok := a.ac.(rpcSender)
	if !ok {
		return nil, fmt.Errorf("%s: gohbase's admin client %T cannot send master calls", op, a.ac)
	}
	var msg proto.Message
	err := a.do(ctx, op, func(ctx context.Context) error {
		var err error
		msg, err = s.SendRPC(call(ctx))
		return err
	})
	return msg, err
}

// schema reads the table's descriptor.
func (a *admin) schema(ctx context.Context, table string) (*pb.TableSchema, error) {
	msg, err := a.send(ctx, "get table descriptor", func(ctx context.Context) hrpc.Call {
		return newMasterCall(ctx, "GetTableDescriptors", &pb.GetTableDescriptorsRequest{
			TableNames: []*pb.TableName{tableName(table)},
		}, &pb.GetTableDescriptorsResponse{})
	})
	if err != nil {
		return nil, err
	}
	for _, s := range msg.(*pb.GetTableDescriptorsResponse).GetTableSchema() {
		if string(s.GetTableName().GetQualifier()) == table {
			return s, nil
		}
	}
	return nil, fmt.Errorf("table %s not found", table)
}

// salts returns the salt count of the table: the attribute's (recorded),
// else what its regions show (0: they show none).
func (a *admin) salts(ctx context.Context, table string, schema *pb.TableSchema) (n int, recorded bool, err error) {
	if v, ok := attribute(schema, SaltsAttribute); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > payload.MaxSalts {
			return 0, true, fmt.Errorf("%w: table %s has attribute %s=%q, not a salt count", ErrSaltsMismatch, table, SaltsAttribute, v)
		}
		return n, true, nil
	}
	starts, err := a.regionStarts(ctx, table)
	if err != nil {
		return 0, false, err
	}
	return saltsOfRegions(starts), false, nil
}

// record writes the salt count into the table's attributes (ModifyTable)
// and waits until the descriptor shows it.
func (a *admin) record(ctx context.Context, table string, schema *pb.TableSchema, salts int) error {
	schema = proto.Clone(schema).(*pb.TableSchema)
	schema.Attributes = append(schema.Attributes, &pb.BytesBytesPair{
		First: []byte(SaltsAttribute), Second: []byte(strconv.Itoa(salts)),
	})
	_, err := a.send(ctx, "modify table", func(ctx context.Context) hrpc.Call {
		return newMasterCall(ctx, "ModifyTable", &pb.ModifyTableRequest{
			TableName: tableName(table), TableSchema: schema,
		}, &pb.ModifyTableResponse{})
	})
	if err != nil {
		return err
	}
	// gohbase's ModifyTableResponse has no procedure id to wait on; the
	// procedure writes the new descriptor before it reopens the regions.
	for attempt := 1; ; attempt++ {
		s, err := a.schema(ctx, table)
		if err != nil {
			return err
		}
		if v, ok := attribute(s, SaltsAttribute); ok {
			if v != strconv.Itoa(salts) { // another process recorded first
				n, _ := strconv.Atoi(v)
				return mismatch(table, n, salts, true)
			}
			return nil
		}
		if err := retry.Sleep(ctx, adminPolicy.Delay(attempt)); err != nil {
			return fmt.Errorf("wait for the new table descriptor: %w", err)
		}
	}
}

// regionStarts returns the start keys of the table's online regions, read
// from hbase:meta.
func (a *admin) regionStarts(ctx context.Context, table string) ([][]byte, error) {
	client := gohbase.NewClient(a.zk,
		gohbase.ZookeeperRoot(a.root),
		gohbase.Logger(slog.New(slog.DiscardHandler)),
		gohbase.RegionDialer(a.conns.dial))
	defer client.Close()
	// Meta rows are "table,startkey,id" under hbase:meta's comparator, which
	// splits rows at the commas: the table's rows are those in
	// [table",,", table" ,,") (as HBase's MetaTableAccessor scans them).
	scan, err := hrpc.NewScanRange(ctx, []byte("hbase:meta"), []byte(table+",,"), []byte(table+" ,,"),
		hrpc.Families(map[string][]string{"info": {"regioninfo"}}))
	if err != nil {
		return nil, err
	}
	sc := client.Scan(scan)
	defer sc.Close()
	var starts [][]byte
	for {
		row, err := sc.Next()
		if err == io.EOF {
			return starts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scan hbase:meta: %w", shortError{err})
		}
		for _, c := range row.Cells {
			info, err := regionInfo(c.Value)
			if err != nil {
				return nil, fmt.Errorf("hbase:meta row %q: %w", c.Row, err)
			}
			if string(info.GetTableName().GetQualifier()) != table ||
				info.GetOffline() || info.GetSplit() || info.GetReplicaId() != 0 {
				continue // a split parent, a replica, another table
			}
			starts = append(starts, info.GetStartKey())
		}
	}
}

// regionInfo decodes an info:regioninfo cell: "PBUF" and a RegionInfo.
func regionInfo(v []byte) (*pb.RegionInfo, error) {
	const magic = "PBUF"
	if !bytes.HasPrefix(v, []byte(magic)) {
		return nil, errors.New("regioninfo without the PBUF magic")
	}
	var info pb.RegionInfo
	if err := proto.Unmarshal(v[len(magic):], &info); err != nil {
		return nil, fmt.Errorf("regioninfo: %w", err)
	}
	return &info, nil
}

// saltsOfRegions returns the salt count that regions with these start keys
// were pre-split for, or 0 when they were not pre-split by CreateTable.
// CreateTable splits at the one-byte keys {1}..{salts-1}; HBase splits a
// growing region later at a row key (17 bytes, whose first byte is a salt)
// and can merge regions. So the one-byte start keys must be exactly
// {1}..{k}, any other start key empty or a row key of a salt <= k, and then
// salts = k+1.
func saltsOfRegions(starts [][]byte) int {
	if len(starts) == 0 {
		return 0
	}
	var ones []int
	for _, s := range starts {
		switch {
		case len(s) == 1:
			ones = append(ones, int(s[0]))
		case len(s) != 0 && len(s) != payload.RowKeyLen:
			return 0
		}
	}
	seen := make([]bool, payload.MaxSalts)
	for _, b := range ones {
		if b == 0 || seen[b] {
			return 0
		}
		seen[b] = true
	}
	k := len(ones)
	for b := 1; b <= k; b++ {
		if !seen[b] {
			return 0
		}
	}
	for _, s := range starts {
		if len(s) == payload.RowKeyLen && int(s[0]) > k {
			return 0
		}
	}
	return k + 1
}

func attribute(schema *pb.TableSchema, key string) (string, bool) {
	for _, a := range schema.GetAttributes() {
		if string(a.GetFirst()) == key {
			return string(a.GetSecond()), true
		}
	}
	return "", false
}

// tableName is table in the default namespace, as gohbase's CreateTable
// names it.
func tableName(table string) *pb.TableName {
	return &pb.TableName{Namespace: []byte("default"), Qualifier: []byte(table)}
}

// masterCall is a master RPC gohbase has no type for. It implements
// hrpc.Call; the admin client routes every call to the active master.
type masterCall struct {
	ctx    context.Context
	name   string
	req    proto.Message
	resp   proto.Message
	region hrpc.RegionInfo
	result chan hrpc.RPCResult
}

func newMasterCall(ctx context.Context, name string, req, resp proto.Message) *masterCall {
	return &masterCall{ctx: ctx, name: name, req: req, resp: resp, result: make(chan hrpc.RPCResult, 1)}
}

func (c *masterCall) Table() []byte                   { return nil }
func (c *masterCall) Name() string                    { return c.name }
func (c *masterCall) Key() []byte                     { return nil }
func (c *masterCall) Region() hrpc.RegionInfo         { return c.region }
func (c *masterCall) SetRegion(r hrpc.RegionInfo)     { c.region = r }
func (c *masterCall) ToProto() proto.Message          { return c.req }
func (c *masterCall) NewResponse() proto.Message      { return proto.Clone(c.resp) }
func (c *masterCall) ResultChan() chan hrpc.RPCResult { return c.result }
func (c *masterCall) Description() string             { return c.name }
func (c *masterCall) Context() context.Context        { return c.ctx }

// connTracker dials TCP connections and closes them all at the end.
type connTracker struct {
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		c.Close()
		return nil, net.ErrClosed
	}
	t.conns = append(t.conns, c)
	return c, nil
}

func (t *connTracker) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
}

func isTableExists(err error) bool {
	return strings.Contains(err.Error(), "TableExistsException")
}

// isStarting reports whether err says HBase is still starting up.
func isStarting(err error) bool {
	s := err.Error()
	for _, m := range []string{
		"PleaseHoldException",
		"ServerNotRunningYetException",
		"MasterNotRunningException",
		"is initializing",
		"NotServingRegionException",
	} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
