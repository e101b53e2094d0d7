package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/delayq/delayq/payload"
)

// idBlock is what submit and inspect know of a cancel by id alone that
// blocks an id.
type idBlock struct {
	Cancelled string // the cancel's record time, RFC 3339
	Until     time.Time
	Exact     bool   // Until is delayd's own (--api); else with delayd's default --max-delay and --retention
	Task      string // what the due time is of (the API's "task"), "" when not known
}

// errIDCancelled marks a submit or replace refused because a cancel by id
// alone blocks its id.
var errIDCancelled = errors.New("id cancelled")

// checkID looks id up before a submit or replace (op) goes to Kafka, where
// ingest's refusal of a blocked id ("id cancelled", to delay-failed) is
// out of delayctl's sight: through delayd's API when --api is set, else in
// HBase's id row. It returns errIDCancelled while a cancel by id alone
// blocks the id. When HBase cannot be reached (embedded mode, no access)
// it warns on stderr and lets the submit through: ingest still refuses a
// reuse, into delay-failed.
func checkID(ctx context.Context, sys *IO, g *globals, api *apiFlag, id, op string) error {
	b, err := lookupBlock(ctx, sys, g, api, id)
	switch {
	case err != nil && api.set():
		return fmt.Errorf("%s of id %q not sent: its state could not be checked: %w (--id-check=false skips the check)", op, id, err)
	case err != nil:
		fmt.Fprintf(sys.Stderr, "delayctl %s: warning: id %q not checked for a cancel by id (%v); if a cancel by id alone blocks it, ingest refuses this %s into delay-failed (\"id cancelled\"): list those with delayctl replay --from -1h --to now --reason \"id cancelled\" --dry-run, or pass --api\n",
			op, id, err, op)
		return nil
	case b == nil || !b.Until.After(sys.Now()):
		return nil
	}
	until := formatTime(b.Until.UnixMilli())
	if !b.Exact {
		until += " with delayd's default --max-delay and --retention (--api gives delayd's own)"
	}
	return fmt.Errorf("%w: %s of id %q refused, nothing sent: it was cancelled by id alone at %s, and an id cancelled by id alone is not reused for --max-delay + --retention after the cancel: blocked until %s (submit under another id)",
		errIDCancelled, op, id, b.Cancelled, until)
}

// lookupBlock returns the cancel by id alone that blocks id, nil when
// none does.
func lookupBlock(ctx context.Context, sys *IO, g *globals, api *apiFlag, id string) (*idBlock, error) {
	if api.set() {
		c, err := api.client(sys, g.timeout)
		if err != nil {
			return nil, err
		}
		var st struct {
			State     string `json:"state"`
			Cancelled string `json:"cancelled_by_id_at"`
			Until     int64  `json:"blocked_until_ms"`
			Task      string `json:"task"`
		}
		if err := c.get(ctx, "/v1/tasks/"+url.PathEscape(id), nil, &st); err != nil {
			if errors.Is(err, errAPINotFound) {
				return nil, nil
			}
			return nil, err
		}
		if st.State != string(payload.PhaseCancelled) || st.Until == 0 {
			return nil, nil
		}
		return &idBlock{Cancelled: st.Cancelled, Until: time.UnixMilli(st.Until), Exact: true, Task: st.Task}, nil
	}
	store, err := g.openStore(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	st, err := payload.State(ctx, store, id, sys.Now())
	if err != nil {
		return nil, g.hbaseError(err)
	}
	return blockOf(st), nil
}

// blockOf is the block of a state read from HBase (delayd's default
// --max-delay and --retention), nil when no cancel by id alone dates one.
func blockOf(st payload.TaskState) *idBlock {
	if st.Phase != payload.PhaseCancelled || st.BlockedUntil == 0 {
		return nil
	}
	b := &idBlock{Cancelled: formatTime(st.CancelledByID), Until: time.UnixMilli(st.BlockedUntil)}
	switch {
	case st.At == 0:
		b.Task = "none: no task with this id was stored"
	case st.Reused:
		b.Task = "the due time is that of a submit recorded after the cancel (refused, or cancelled): never delivered"
	default:
		b.Task = "the due time is that of the task the cancel cancelled: never delivered"
	}
	return b
}
