package console

import (
	"context"
	"errors"
	"net/http"

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

// stateReader lets payload.State read the console's Store, which has no
// writes: State never calls PutIDs.
type stateReader struct{ Store }

var errReadOnly = errors.New("console: the payload store is read only here")

func (stateReader) PutIDs(context.Context, []payload.IDWrite) error { return errReadOnly }
