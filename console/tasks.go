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

// tasks lists stored tasks: ?topic=&key=&from=&to=&state=&limit=&cursor=
// (from and to: payload.ParseTime, as delayctl), as GET /v1/tasks of the
// HTTP API.
func (c *Console) tasks(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	q, err := find.ParseQuery(r.URL.Query(), c.cfg.Now())
	if err != nil {
		return nil, httpError{http.StatusBadRequest, err.Error()}
	}
	p, err := find.List(r.Context(), b.Store, q, c.cfg.Now())
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
	st, err := b.Store.GetIDs(ctx, []uint64{payload.TaskID(id)})
	if err != nil {
		return "", backend("payload store", err)
	}
	due := st[0].Due()
	if due == 0 {
		return "", httpError{http.StatusNotFound, fmt.Sprintf("no task with id %q (never submitted, expired, or stored before ids were tracked: give its due time)", id)}
	}
	return strconv.FormatInt(due, 10), nil
}
