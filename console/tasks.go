package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// The Tasks page and the lookup by id alone read more of the payload
// store than Store declares; delayd's stores (HBase, memory) have both.
// A Backends.Store without them turns the two off: the page says so.
// The first is find.Scanner; idReader reads id rows (payload.IDStore),
// which know a task's current due time.
type idReader interface {
	GetIDs(ctx context.Context, ids []uint64) ([]payload.IDState, error)
}

// tasks lists stored tasks: ?topic=&key=&from=&to=&state=&limit=&cursor=
// (from and to: RFC 3339 or unix ms), as GET /v1/tasks of the HTTP API.
func (c *Console) tasks(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	f, ok := b.Store.(find.Scanner)
	if !ok {
		return nil, httpError{http.StatusNotImplemented, "this delayd has no payload store that lists tasks"}
	}
	q, err := find.ParseQuery(r.URL.Query())
	if err != nil {
		return nil, httpError{http.StatusBadRequest, err.Error()}
	}
	p, err := find.List(r.Context(), f, q, c.cfg.Now())
	switch {
	case errors.Is(err, find.ErrQuery), errors.Is(err, find.ErrCursor):
		return nil, httpError{http.StatusBadRequest, err.Error()}
	case err != nil:
		return nil, backend("payload store", err)
	}
	out := find.ViewOf(p)
	if len(out.Tasks) > 0 {
		c.cfg.Logger.Info("console tasks listed", append([]any{"tasks", len(out.Tasks), "topic", q.Topic, "key", q.KeyPrefix}, c.who(r)...)...)
	}
	return out, nil
}

// currentDue returns at when given, else the task's current due time
// from its id row (as unix ms text): the task page needs only an id.
func currentDue(ctx context.Context, b *Backends, id, at string) (string, error) {
	if at != "" || id == "" || len(id) > payload.MaxNameLen {
		return at, nil // taskRef reports a missing or long id
	}
	ids, ok := b.Store.(idReader)
	if !ok {
		return "", httpError{http.StatusNotImplemented, "this delayd's payload store keeps no id rows: give the due time (at)"}
	}
	st, err := ids.GetIDs(ctx, []uint64{payload.TaskID(id)})
	if err != nil {
		return "", backend("payload store", err)
	}
	due := st[0].Due()
	if due == 0 {
		return "", httpError{http.StatusNotFound, fmt.Sprintf("no task with id %q (never submitted, expired, or stored before ids were tracked: give its due time)", id)}
	}
	return strconv.FormatInt(due, 10), nil
}
