package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/delayq/delayq/payload/find"
)

func (s *Server) list(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	if s.states == nil {
		return 0, nil, fail(http.StatusNotImplemented, "this delayd has no task store to list")
	}
	q, err := find.ParseQuery(r.URL.Query(), s.now())
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	p, err := s.states.List(ctx, q)
	switch {
	case errors.Is(err, find.ErrQuery), errors.Is(err, find.ErrCursor):
		return 0, nil, fail(http.StatusBadRequest, "%v", err)
	case err != nil:
		return 0, nil, unavailable("the payload store did not answer: try again", err)
	}
	return http.StatusOK, find.ViewOf(p), nil
}
