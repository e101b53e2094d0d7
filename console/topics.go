package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/delayq/delayq/topicctl"
)

// Topics are the operators' controls of business topics (topicctl.Store):
// the topics page lists them, and pauses, resumes and limits topics.
type Topics interface {
	Pause(ctx context.Context, topic string) error
	Resume(ctx context.Context, topic string) error
	SetRate(ctx context.Context, topic string, perSecond int) error
	List(ctx context.Context) ([]topicctl.Status, bool, error)
}

// registerTopics adds the topics page's API: GET topics, and the actions
// (--console-write and the token, like every action) pause, resume
// (topic "*": every topic) and rate.
func (c *Console) registerTopics(mux *http.ServeMux) {
	mux.Handle("GET /ui/api/topics", c.api(c.topics))
	mux.Handle("POST /ui/api/topics/pause", c.api(c.action(c.topicAction("pause"))))
	mux.Handle("POST /ui/api/topics/resume", c.api(c.action(c.topicAction("resume"))))
	mux.Handle("POST /ui/api/topics/rate", c.api(c.action(c.topicAction("rate"))))
}

// TopicView is one row of the topics page.
type TopicView struct {
	Topic       string `json:"topic"`
	State       string `json:"state"` // paused, limited or active
	Paused      bool   `json:"paused"`
	PerSecond   int    `json:"per_second"`
	ExpireAfter string `json:"expire_after,omitempty"`
	Held        int64  `json:"held"`
}

func (c *Console) topicsBackend() (Topics, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	if b.Topics == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd has no topic controls"}
	}
	return b.Topics, nil
}

func (c *Console) topics(r *http.Request) (any, error) {
	tc, err := c.topicsBackend()
	if err != nil {
		return nil, err
	}
	st, all, err := tc.List(r.Context())
	if err != nil {
		return nil, backend("redis", err)
	}
	rows := make([]TopicView, len(st))
	for i, s := range st {
		v := TopicView{Topic: s.Topic, State: s.State(all), Paused: s.Control.Paused, PerSecond: s.Control.Rate, Held: s.Held}
		if s.Control.ExpireAfter > 0 {
			v.ExpireAfter = s.Control.ExpireAfter.String()
		}
		rows[i] = v
	}
	return map[string]any{"all_paused": all, "topics": rows}, nil
}

type topicRequest struct {
	Topic     string `json:"topic"`
	PerSecond *int   `json:"per_second,omitempty"`
}

func (c *Console) topicAction(op string) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		tc, err := c.topicsBackend()
		if err != nil {
			return nil, err
		}
		var req topicRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		switch op {
		case "pause":
			err = tc.Pause(r.Context(), req.Topic)
		case "resume":
			err = tc.Resume(r.Context(), req.Topic)
		default:
			if req.PerSecond == nil || *req.PerSecond < 0 {
				return nil, httpError{http.StatusBadRequest, "per_second: want a whole number >= 0 (0: unlimited)"}
			}
			err = tc.SetRate(r.Context(), req.Topic, *req.PerSecond)
		}
		switch {
		case errors.Is(err, topicctl.ErrTopic):
			return nil, httpError{http.StatusBadRequest, err.Error()}
		case err != nil:
			return nil, backend("redis", err)
		}
		c.cfg.Logger.Info("console topic control set", append([]any{"op", op, "topic", req.Topic}, c.who(r)...)...)
		return c.topics(r)
	}
}
