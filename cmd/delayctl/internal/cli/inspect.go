package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// inspection is what inspect reports, also as JSON.
type inspection struct {
	ID        string   `json:"id"`
	ID64      string   `json:"id64"`
	ExecAt    int64    `json:"exec_at"`
	Due       string   `json:"due"`
	Table     string   `json:"table"`
	RowKey    string   `json:"rowkey"`
	Stored    bool     `json:"stored"`
	Topic     string   `json:"topic,omitempty"`
	Key       *string  `json:"key,omitempty"`
	Headers   []header `json:"headers,omitempty"`
	Payload   int      `json:"payload_bytes"`
	Cancelled bool     `json:"cancelled"`
	// Pending: the task will be delivered when due. Without --at it is
	// the state GET /v1/tasks/{id} and the console answer (payload.State);
	// with --at, that row's: stored, not cancelled, and indexed.
	Pending bool   `json:"pending"`
	State   string `json:"state,omitempty"`
	// Indexed: the row's entry is in the Redis zset Zset, where the scanner
	// finds it when due. A cancelled row's entry may linger there until
	// then; a delivered one is gone.
	Indexed bool   `json:"indexed"`
	Zset    string `json:"zset"`
	// Cancelled by id alone (without --at): the cancel's time, until when
	// it blocks the id (a submit of it is refused), how that end is known,
	// and what the due time is of ("none: …" when no task was stored).
	CancelledByID string `json:"cancelled_by_id_at,omitempty"`
	BlockedUntil  string `json:"blocked_until,omitempty"`
	BlockedBy     string `json:"blocked_until_from,omitempty"`
	Task          string `json:"task,omitempty"`
}

// setBlock records b in in.
func (in *inspection) setBlock(b *idBlock) {
	if b == nil {
		return
	}
	in.CancelledByID, in.BlockedUntil, in.Task = b.Cancelled, payload.FormatTime(b.Until.UnixMilli()), b.Task
	in.BlockedBy = "delayd's default --max-delay + --retention after the cancel (--api gives delayd's own)"
	if b.Exact {
		in.BlockedBy = "delayd's API"
	}
}

type header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func newInspect(sys *IO, g *globals) *cobra.Command {
	var (
		id     string
		asJSON bool
		api    apiFlag
	)
	at := &timeValue{now: sys.Now}
	cmd := &cobra.Command{
		Use:   "inspect --id ID [--at TIME]",
		Short: "Show a stored task and whether it is still pending",
		Long: `inspect reads the task's row from HBase (topic, key, headers, payload size,
cancelled or not) and asks Redis whether its entry is still indexed; with --api (or DELAYQ_API) it asks delayd's HTTP API
instead, which also answers in embedded mode. Without --at it looks the task's current due time up in
its id row (tasks submitted since ids are tracked: cancel by id and
reschedule) and reports its state as GET /v1/tasks/{id} does: pending,
cancelled or delivered-or-expired (a replaced task: its replace's row).
With --at, that row is pending when stored, not cancelled and indexed. An id cancelled by id alone also shows the cancel's
time and until when it blocks the id (a submit of it is refused): from
delayd's API with --api, else with delayd's default --max-delay and
--retention. It exits with 1 when there is no row, except for an id
cancelled by id alone of which no task was stored (said so).`,
		Example: `  delayctl inspect --id reminder-42
  delayctl inspect --id reminder-42 --at 2030-01-02T15:04:05Z
  delayctl inspect --id 1871234567890123456 --at 1893596645000 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := require(cmd, "id"); err != nil {
				return err
			}
			ctx := cmd.Context()
			if api.set() {
				c, err := api.client(sys, g.timeout)
				if err != nil {
					return err
				}
				in, err := inspectAPI(ctx, c, id, at.ms(), cmd.Flags().Changed("at"))
				if err != nil {
					return err
				}
				return in.report(sys.Stdout, asJSON)
			}
			in, err := inspectStored(ctx, sys, g, id, at.ms(), cmd.Flags().Changed("at"))
			if err != nil {
				return err
			}
			return in.report(sys.Stdout, asJSON)
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	cmd.Flags().Var(at, "at", "the task's due time (default: its current one, from its id row): "+timeHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	api.register(cmd)
	return cmd
}

// inspectStored opens Redis and HBase and looks task id up there
// (inspectRow), its errors told apart for the operator.
func inspectStored(ctx context.Context, sys *IO, g *globals, id string, at int64, atSet bool) (inspection, error) {
	ix, rdb, err := g.openIndex(ctx)
	if err != nil {
		return inspection{}, withAPIHint(err)
	}
	defer rdb.Close()
	store, err := g.openStore(ctx)
	if err != nil {
		return inspection{}, withAPIHint(err)
	}
	defer store.Close()

	in, ref, err := inspectRow(ctx, store, ix, id, at, atSet, sys.Now())
	var ie indexError
	switch {
	case errors.As(err, &ie):
		return inspection{}, fmt.Errorf("redis at %s: %w", g.redis, ie.err)
	case errors.Is(err, errNoIDRow):
		return inspection{}, fmt.Errorf("no task with id %q in table %s (give --at for a task stored before ids were tracked)", id, g.table)
	case err != nil:
		return inspection{}, g.hbaseError(err)
	}
	in.Table, in.RowKey = g.table, hex.EncodeToString(payload.RowKey(g.salts, ref))
	return in, nil
}

// errNoIDRow: inspect without --at found no id row of the name.
var errNoIDRow = errors.New("no id row")

// indexError is a failure of the Redis index, told from the store's.
type indexError struct{ err error }

func (e indexError) Error() string { return e.err.Error() }
func (e indexError) Unwrap() error { return e.err }

// inspectIndex is what inspect asks the Redis index.
type inspectIndex interface {
	Pending(ctx context.Context, e zset.Entry) (bool, error)
	Key(e zset.Entry) string
}

// inspectRow looks task id up as GET /v1/tasks/{id} and the console's task
// page do. Without --at (hasAt false) its state and due time are
// payload.State's, and the row read is the current one (a replace's row
// is its VersionID's); pending is that state, not the index. With --at
// it reads that row of the name: pending when stored, not cancelled and
// indexed. It returns the row read; Table and RowKey are the caller's.
func inspectRow(ctx context.Context, store payload.StateReader, ix inspectIndex, id string, at int64, hasAt bool, now time.Time) (inspection, payload.Ref, error) {
	ref := payload.Ref{ID: payload.TaskID(id), ExecAt: at}
	var phase payload.TaskState
	var block *idBlock
	if !hasAt {
		var err error
		if phase, err = payload.State(ctx, store, id, now); err != nil {
			return inspection{}, ref, err
		}
		if phase.Phase == payload.PhaseUnknown {
			return inspection{}, ref, errNoIDRow
		}
		ids, err := store.GetIDs(ctx, []uint64{ref.ID})
		if err != nil {
			return inspection{}, ref, err
		}
		ref.ID, ref.ExecAt = ids[0].Row(ref.ID), phase.At
		block = blockOf(phase)
	}
	in := inspection{ID: id, ID64: strconv.FormatUint(ref.ID, 10), ExecAt: ref.ExecAt, Due: payload.FormatTime(ref.ExecAt)}
	in.setBlock(block)
	if ref.ExecAt == 0 { // cancelled by id alone, no task stored
		in.State = string(phase.Phase)
		return in, ref, nil
	}
	rows, err := store.Get(ctx, []payload.Ref{ref})
	if err != nil {
		return in, ref, err
	}
	e := zset.Entry{ID: ref.ID, ExecAt: ref.ExecAt}
	if in.Indexed, err = ix.Pending(ctx, e); err != nil {
		return in, ref, indexError{err}
	}
	in.Zset = ix.Key(e)
	if t := rows[0]; t != nil {
		in.Stored, in.Topic, in.Cancelled, in.Payload = true, t.Topic, t.Cancel, len(t.Value)
		if t.Key != nil {
			k := string(t.Key)
			in.Key = &k
		}
		for _, h := range t.Headers {
			in.Headers = append(in.Headers, header{Key: h.Key, Value: string(h.Value)})
		}
	}
	switch {
	case !hasAt:
		in.State = string(phase.Phase)
		in.Cancelled = phase.Phase == payload.PhaseCancelled
	case in.Cancelled:
		in.State = string(payload.PhaseCancelled)
	case in.Stored && in.Indexed:
		in.State = string(payload.PhasePending)
	case in.Stored:
		in.State = string(payload.PhaseDone)
	}
	in.Pending = in.State == string(payload.PhasePending)
	return in, ref, nil
}

// report prints in; a task without a row is an error.
func (in inspection) report(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(in); err != nil {
			return err
		}
	} else {
		in.print(w)
	}
	switch {
	case !in.Stored && in.BlockedUntil != "" && in.ExecAt == 0:
		return nil // an id cancelled by id alone with no task: known, and said so
	case !in.Stored:
		return fmt.Errorf("no row for id %q due %s in table %s", in.ID, in.Due, in.Table)
	}
	return nil
}

func (in inspection) print(w io.Writer) {
	line := func(k, format string, args ...any) { fmt.Fprintf(w, "%-10s %s\n", k, fmt.Sprintf(format, args...)) }
	line("id", "%s (internal id %s)", in.ID, in.ID64)
	if in.ExecAt == 0 && in.BlockedUntil != "" {
		line("due", "(none: no task with this id was stored)")
	} else {
		line("due", "%s", formatTime(in.ExecAt))
	}
	if in.State != "" {
		line("state", "%s", in.State)
	}
	if in.BlockedUntil != "" {
		line("cancelled", "by id alone at %s", in.CancelledByID)
		line("blocked", "until %s (from %s): a submit or replace of this id before then is refused", in.BlockedUntil, in.BlockedBy)
		line("task", "%s", in.Task)
	}
	if in.RowKey == "" {
		line("row", "%s", in.Table)
	} else {
		line("row", "%s in table %s", in.RowKey, in.Table)
	}
	if !in.Stored {
		line("stored", "no")
	} else {
		line("stored", "yes")
		switch {
		case in.Topic == "":
			line("topic", "(none: only the cancel marker is stored)")
		default:
			line("topic", "%s", in.Topic)
		}
		if in.Key == nil {
			line("key", "(none)")
		} else {
			line("key", "%q (%d bytes)", *in.Key, len(*in.Key))
		}
		hs := make([]string, len(in.Headers))
		for i, h := range in.Headers {
			hs[i] = fmt.Sprintf("%s=%q", h.Key, h.Value)
		}
		if len(hs) == 0 {
			hs = []string{"(none)"}
		}
		line("headers", "%s", strings.Join(hs, " "))
		line("payload", "%d bytes", in.Payload)
		line("cancelled", "%s", yesNo(in.Cancelled))
	}
	line("pending", "%s", yesNo(in.Pending))
	if in.Zset != "" {
		line("index", "%s redis zset %s", map[bool]string{true: "in", false: "not in"}[in.Indexed], in.Zset)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
