package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/delayq/delayq/payload/find"
)

// Lister lists stored tasks (find.List over the payload store). The
// States handed to New may implement it; without it GET /v1/tasks
// answers 501.
type Lister interface {
	List(ctx context.Context, q find.Query) (find.Page, error)
}

func (s *Server) list(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	l, ok := s.states.(Lister)
	if !ok {
		return 0, nil, fail(http.StatusNotImplemented, "this delayd has no task store to list")
	}
	q, err := find.ParseQuery(r.URL.Query())
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%v", err)
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
	return http.StatusOK, find.ViewOf(p), nil
}
