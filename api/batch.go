package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
)

// MaxBatch is the most tasks one POST /v1/tasks:batch may carry.
const MaxBatch = 1000

// maxRefused caps the bad tasks a refused batch names.
const maxRefused = 100

// batchRequest is the body of POST /v1/tasks:batch.
type batchRequest struct {
	Tasks []taskRequest `json:"tasks"`
}

// refusal is one bad task of a refused batch.
type refusal struct {
	Index int    `json:"index"`
	Error string `json:"error"`
}

// batch checks every task as submit does and, only when all pass, writes
// them in one produce call; the answer comes once Kafka has them all.
func (s *Server) batch(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	var req batchRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if n := len(req.Tasks); n == 0 || n > MaxBatch {
		return 0, nil, fail(http.StatusBadRequest, `"tasks": %d tasks, want 1 to %d`, n, MaxBatch)
	}
	msgs := make([]kafka.Message, 0, len(req.Tasks))
	answers := make([]taskAnswer, 0, len(req.Tasks))
	var refused []refusal
	now := s.now()
	for i, tr := range req.Tasks {
		m, rcpt, err := s.check(tr, now)
		if err != nil {
			refused = append(refused, refusal{Index: i, Error: err.Error()})
			continue
		}
		a := answer(rcpt.ID, rcpt.At)
		a.Input = rcpt.Input
		msgs, answers = append(msgs, m), append(answers, a)
	}
	if len(refused) > 0 {
		e := fail(http.StatusBadRequest, "%d of %d tasks refused, nothing written; the first: tasks[%d]: %s",
			len(refused), len(req.Tasks), refused[0].Index, refused[0].Error)
		e.refused = refused[:min(len(refused), maxRefused)]
		return 0, nil, e
	}
	if err := s.write(r.Context(), func(ctx context.Context) error { return s.c.SendAll(ctx, msgs) }); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"tasks": answers, "count": len(answers)}, nil
}

// check turns one task request into its input message, refused for the
// reasons submit refuses it.
func (s *Server) check(req taskRequest, now time.Time) (kafka.Message, delayq.Receipt, error) {
	t, err := req.task(now, s.maxDelay())
	if err != nil {
		return kafka.Message{}, delayq.Receipt{}, err
	}
	m, rcpt, err := s.c.Message(t)
	if err != nil {
		return kafka.Message{}, delayq.Receipt{}, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), delayq.ErrInvalid.Error()+": "))
	}
	if _, err := payload.Decode(record.ToMessage(m), now, s.cfg.Decode); err != nil {
		return kafka.Message{}, delayq.Receipt{}, err
	}
	return m, rcpt, nil
}
