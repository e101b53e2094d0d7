package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// Lister lists stored tasks (find.List over the payload store). The
// States handed to New may implement it; without it GET /v1/tasks
// answers 501.
type Lister interface {
	List(ctx context.Context, q find.Query) (find.Page, error)
}

// listAnswer is the body of GET /v1/tasks.
type listAnswer struct {
	Tasks    []find.Item `json:"tasks"`
	Next     string      `json:"next,omitempty"`
	Examined int         `json:"examined"`
}

func (s *Server) list(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	l, ok := s.states.(Lister)
	if !ok {
		return 0, nil, fail(http.StatusNotImplemented, "this delayd has no task store to list")
	}
	q, err := listQuery(r)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	p, err := l.List(ctx, q)
	switch {
	case errors.Is(err, find.ErrQuery), errors.Is(err, find.ErrCursor):
		return 0, nil, fail(http.StatusBadRequest, "%v", err)
	case err != nil:
		return 0, nil, unavailable("the payload store did not answer: try again", err)
	}
	a := listAnswer{Tasks: make([]find.Item, len(p.Tasks)), Next: p.Next, Examined: p.Examined}
	for i, t := range p.Tasks {
		a.Tasks[i] = find.ItemOf(t)
	}
	return http.StatusOK, a, nil
}

// listQuery reads the query string: topic, from, to, key, state, limit,
// cursor.
func listQuery(r *http.Request) (find.Query, error) {
	v := r.URL.Query()
	q := find.Query{Topic: v.Get("topic"), KeyPrefix: v.Get("key"), State: payload.Phase(v.Get("state")), Cursor: v.Get("cursor")}
	var reasons []string
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := v.Get(f.name); s != "" {
			t, err := queryTime(s)
			if err != nil {
				reasons = append(reasons, `"`+f.name+`": `+err.Error())
			}
			*f.dst = t
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > find.MaxLimit {
			reasons = append(reasons, `"limit" `+strconv.Quote(s)+": want 1 to "+strconv.Itoa(find.MaxLimit))
		}
		q.Limit = n
	}
	if len(reasons) > 0 {
		return q, fail(http.StatusBadRequest, "%s", strings.Join(reasons, "; "))
	}
	return q, nil
}

// queryTime reads a time of the query string: unix ms or RFC 3339.
func queryTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UnixMilli() < 0 {
		return 0, errors.New(strconv.Quote(s) + " is not unix ms or RFC 3339 (2030-01-02T15:04:05Z)")
	}
	return t.UnixMilli(), nil
}
