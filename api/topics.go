package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topicctl"
)

// Topics are the operators' controls of business topics (topicctl.Store).
type Topics interface {
	Pause(ctx context.Context, topic string) error
	Resume(ctx context.Context, topic string) error
	SetRate(ctx context.Context, topic string, perSecond int) error
	SetExpireAfter(ctx context.Context, topic string, d time.Duration) error
	List(ctx context.Context) ([]topicctl.Status, bool, error)
}

// routeTopics adds the topic controls: pause and resume ("*": every
// topic), the delivery rate and the default expiry.
func (s *Server) routeTopics(mux *http.ServeMux) {
	mux.Handle("GET /v1/topics", s.op("topics", s.listTopics))
	mux.Handle("POST /v1/topics/{topic}/pause", s.op("pause", s.topicOp(func(ctx context.Context, t string, _ *http.Request) error {
		return s.cfg.Topics.Pause(ctx, t)
	})))
	mux.Handle("POST /v1/topics/{topic}/resume", s.op("resume", s.topicOp(func(ctx context.Context, t string, _ *http.Request) error {
		return s.cfg.Topics.Resume(ctx, t)
	})))
	mux.Handle("PUT /v1/topics/{topic}/rate", s.op("rate", s.topicOp(s.setRate)))
	mux.Handle("DELETE /v1/topics/{topic}/rate", s.op("rate", s.topicOp(func(ctx context.Context, t string, _ *http.Request) error {
		return s.cfg.Topics.SetRate(ctx, t, 0)
	})))
	mux.Handle("PUT /v1/topics/{topic}/expire-after", s.op("expire_after", s.topicOp(s.setExpireAfter)))
	mux.Handle("DELETE /v1/topics/{topic}/expire-after", s.op("expire_after", s.topicOp(func(ctx context.Context, t string, _ *http.Request) error {
		return s.cfg.Topics.SetExpireAfter(ctx, t, 0)
	})))
}

// TopicStatus is a topic in the answer of GET /v1/topics.
type TopicStatus struct {
	Topic string `json:"topic"`
	// State is "paused" (by its own pause or by a pause of every topic),
	// "limited" (a rate) or "active".
	State       string `json:"state"`
	Paused      bool   `json:"paused"` // its own pause
	PerSecond   int    `json:"per_second,omitempty"`
	ExpireAfter string `json:"expire_after,omitempty"`
	// Held is the number of due tasks held back (pending, not late).
	Held int64 `json:"held"`
}

// TopicsAnswer is the answer of GET /v1/topics and of every change.
type TopicsAnswer struct {
	AllPaused bool          `json:"all_paused"`
	Topics    []TopicStatus `json:"topics"`
}

func (s *Server) listTopics(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	if s.cfg.Topics == nil {
		return 0, nil, fail(http.StatusNotImplemented, "this delayd has no topic controls")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	st, all, err := s.cfg.Topics.List(ctx)
	if err != nil {
		return 0, nil, unavailable("redis did not answer: try again", err)
	}
	return http.StatusOK, topicsAnswer(st, all), nil
}

func topicsAnswer(st []topicctl.Status, all bool) TopicsAnswer {
	a := TopicsAnswer{AllPaused: all, Topics: make([]TopicStatus, len(st))}
	for i, t := range st {
		ts := TopicStatus{Topic: t.Topic, Paused: t.Control.Paused, PerSecond: t.Control.Rate, Held: t.Held, State: t.State(all)}
		if t.Control.ExpireAfter > 0 {
			ts.ExpireAfter = t.Control.ExpireAfter.String()
		}
		a.Topics[i] = ts
	}
	return a
}

// topicOp wraps a change of {topic}'s controls: it answers the topics'
// state after the change.
func (s *Server) topicOp(change func(ctx context.Context, topic string, r *http.Request) error) func(http.ResponseWriter, *http.Request) (int, any, error) {
	return func(w http.ResponseWriter, r *http.Request) (int, any, error) {
		if s.cfg.Topics == nil {
			return 0, nil, fail(http.StatusNotImplemented, "this delayd has no topic controls")
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
		defer cancel()
		if err := change(ctx, r.PathValue("topic"), r); err != nil {
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				return 0, nil, err
			case errors.Is(err, topicctl.ErrTopic):
				return 0, nil, fail(http.StatusBadRequest, "%v", err)
			}
			return 0, nil, unavailable("redis did not answer: try again", err)
		}
		return s.listTopics(w, r)
	}
}

// rateRequest is the body of PUT /v1/topics/{topic}/rate.
type rateRequest struct {
	PerSecond *int `json:"per_second"`
}

func (s *Server) setRate(ctx context.Context, topic string, r *http.Request) error {
	var req rateRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.PerSecond == nil || *req.PerSecond < 0 {
		return fail(http.StatusBadRequest, `"per_second": want a whole number >= 0 (0: unlimited)`)
	}
	return s.cfg.Topics.SetRate(ctx, topic, *req.PerSecond)
}

// expireRequest is the body of PUT /v1/topics/{topic}/expire-after.
type expireRequest struct {
	ExpireAfter string `json:"expire_after"`
}

func (s *Server) setExpireAfter(ctx context.Context, topic string, r *http.Request) error {
	var req expireRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	d, err := payload.ParseDelay(`"expire_after"`, req.ExpireAfter)
	if err != nil {
		return fail(http.StatusBadRequest, "%v; 0s: none", err)
	}
	return s.cfg.Topics.SetExpireAfter(ctx, topic, d)
}
