package api

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/internal/metric"
	"github.com/delayq/delayq/kafka/record"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// OpenAPI is the API's OpenAPI 3 document, served at /v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Client writes requests to delay-input (*delayq.Client).
type Client interface {
	Message(t delayq.Task) (kafka.Message, delayq.Receipt, error)
	Send(ctx context.Context, m kafka.Message) error
	SendAll(ctx context.Context, ms []kafka.Message) error
	CancelByID(ctx context.Context, id string) error
	Reschedule(ctx context.Context, id string, at time.Time) error
}

// States looks a task up by id (payload.State over the payload store).
type States interface {
	State(ctx context.Context, id string) (payload.TaskState, error)
	// List lists stored tasks (find.List over the payload store).
	List(ctx context.Context, q find.Query) (find.Page, error)
}

// Server serves the API. Build it with New.
type Server struct {
	cfg      Config
	c        Client
	states   States
	log      *slog.Logger
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	clients  *clients // nil: no rate limit
	hosts    []string // Addr's host, for LocalHosts
	now      func() time.Time
}

// New returns a Server writing through c and reading states from states
// (nil: GET answers 501).
func New(cfg Config, c Client, states States) (*Server, error) {
	cfg.setDefaults()
	err := cfg.Validate()
	if c == nil {
		err = errors.Join(err, fmt.Errorf("%w: nil client", ErrConfig))
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	s := &Server{
		cfg: cfg, c: c, states: states, now: time.Now,
		log: cfg.Logger.With("component", "api"),
		requests: metric.Register(cfg.Registerer, &errs, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delayq_api_requests_total",
			Help: "HTTP API requests by operation and status code.",
		}, []string{"op", "code"})),
		latency: metric.Register(cfg.Registerer, &errs, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "delayq_api_request_seconds",
			Help:    "HTTP API request latency by operation (Kafka acks included).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"op"})),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("api: metrics: %w", err)
	}
	if cfg.Rate > 0 {
		s.clients = newClients(cfg.Rate, cfg.Burst, cfg.MaxClients)
	}
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil {
		s.hosts = []string{host}
	}
	return s, nil
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/tasks", s.op("submit", s.submit))
	mux.Handle("GET /v1/tasks/{id}", s.op("get", s.get))
	mux.Handle("PATCH /v1/tasks/{id}", s.op("reschedule", s.reschedule))
	mux.Handle("PUT /v1/tasks/{id}", s.op("replace", s.replace))
	mux.Handle("DELETE /v1/tasks/{id}", s.op("cancel", s.cancel))
	mux.Handle("GET /v1/tasks", s.op("list", s.list))
	mux.Handle("POST /v1/tasks:batch", s.opLimit("batch", s.cfg.MaxBatchBody, s.batch))
	s.routeTopics(mux)
	mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody{Error: fmt.Sprintf("no route %s %s (see /v1/openapi.yaml)", r.Method, r.URL.Path)})
	})
	return mux
}

// Run serves the API on Addr (or Config.Listener), with the limits of
// Config.Serve, until ctx ends, then shuts down gracefully (requests in
// flight get WriteTimeout to finish).
func (s *Server) Run(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("api: listen on %s: %w", s.cfg.Addr, err)
		}
	}
	srv, err := httpserve.New(ln, s.Handler(), s.cfg.Serve)
	if err != nil {
		ln.Close()
		return fmt.Errorf("api: %w", err)
	}
	s.log.Info("api listening", "addr", ln.Addr().String(), "token", s.cfg.Token != "", "rate_per_client", s.cfg.Rate)
	if err := srv.Run(ctx); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	return nil
}

// apiError is an answer other than success. cause, when set, is logged
// but never answered: a dependency's error names its addresses.
type apiError struct {
	code    int
	reason  string
	cause   error
	refused []refusal // a batch's bad tasks
}

func (e *apiError) Error() string { return e.reason }

func fail(code int, format string, args ...any) *apiError {
	return &apiError{code: code, reason: fmt.Sprintf(format, args...)}
}

// unavailable is a 503 naming the dependency that failed: the caller
// retries.
func unavailable(reason string, cause error) *apiError {
	return &apiError{code: http.StatusServiceUnavailable, reason: reason, cause: cause}
}

type errorBody struct {
	Error   string    `json:"error"`
	Refused []refusal `json:"refused,omitempty"`
}

// op wraps a handler: the token, the body limit, metrics and errors.
func (s *Server) op(name string, h func(w http.ResponseWriter, r *http.Request) (int, any, error)) http.Handler {
	return s.opLimit(name, s.cfg.MaxBody, h)
}

// opLimit is op with a body limit of its own.
func (s *Server) opLimit(name string, maxBody int64, h func(w http.ResponseWriter, r *http.Request) (int, any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code, body, err := s.serve(w, r, maxBody, h)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{code: http.StatusInternalServerError, reason: "internal error (the reason is in delayd's log)", cause: err}
			}
			code, body = ae.code, errorBody{Error: ae.reason, Refused: ae.refused}
			if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			if code >= 500 {
				s.log.Warn("request failed", "op", name, "code", code, "reason", ae.reason, "err", ae.cause)
			}
		}
		writeJSON(w, code, body)
		s.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		s.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, maxBody int64, h func(w http.ResponseWriter, r *http.Request) (int, any, error)) (int, any, error) {
	if s.cfg.LocalHosts && !httpserve.HostAllowed(r.Host, s.hosts) {
		return 0, nil, fail(http.StatusMisdirectedRequest, "this API does not answer to the host %q", r.Host)
	}
	if s.clients != nil && !s.clients.allow(r.RemoteAddr, s.now()) {
		return 0, nil, fail(http.StatusTooManyRequests, "over %g requests a second from one client: slow down", s.cfg.Rate)
	}
	if s.cfg.Token != "" {
		if !httpserve.Bearer(r, s.cfg.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="delayq"`)
			return 0, nil, fail(http.StatusUnauthorized, "missing or wrong bearer token")
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	return h(w, r)
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// decodeBody reads r's JSON body into v: unknown fields, trailing data,
// a body over MaxBody and a content type other than JSON (or none) are
// errors. A JSON content type is what a browser cannot send to another
// site without asking it first (CORS preflight).
func decodeBody(r *http.Request, v any) error {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
		return fail(http.StatusUnsupportedMediaType, "content type %q: send application/json (curl: -H 'Content-Type: application/json')", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fail(http.StatusRequestEntityTooLarge, "body over the %d-byte limit", tooLarge.Limit)
	case err != nil:
		return fail(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	return nil
}

// taskRequest is the body of POST /v1/tasks.
type taskRequest struct {
	Topic       string            `json:"topic"`
	ID          string            `json:"id"`
	At          json.RawMessage   `json:"at"`
	After       string            `json:"after"`
	Key         *string           `json:"key"`
	Value       *string           `json:"value"`
	ValueBase64 *string           `json:"value_base64"`
	Headers     map[string]string `json:"headers"`
	Every       string            `json:"every"`
	Cron        string            `json:"cron"`
	TZ          string            `json:"tz"`
	Until       json.RawMessage   `json:"until"`
	Count       int64             `json:"count"`
	ExpireAfter string            `json:"expire_after"`
}

// taskAnswer is the body of a 201 or 202 answer about one task.
type taskAnswer struct {
	ID    string `json:"id"`
	State string `json:"state,omitempty"`
	At    string `json:"at,omitempty"`
	AtMs  int64  `json:"at_ms,omitempty"`
	Input string `json:"input,omitempty"`
	Rule  string `json:"rule,omitempty"` // PATCH, PUT, DELETE: what the op does to an id with no task yet
}

// The rules of ops by id for an id with no stored task (taskstate's doc,
// "Unknown ids"), as the 202 answers state them.
const (
	ruleReschedule = "a reschedule moves only a task of this id submitted less than the reschedule grace (30 s by default) after it; one that finds no such task goes to delay-failed when that grace ends and moves no task submitted later"
	ruleCancel     = "a cancel by id alone is kept: this id stays cancelled for --max-delay + --retention (GET /v1/tasks/{id} says until when): a task of this id submitted before the cancel and still on its way is cancelled when it arrives; one submitted after it is refused (409 here, delay-failed with \"id cancelled\" on Kafka)"
	ruleReplace    = "a replace stores this task in place of every task of this id recorded before it, in either arrival order: the old one is never delivered, this one once; with no task of this id stored it acts as a submit; an id cancelled by id alone refuses it (409, or delay-failed with \"id cancelled\")"
)

func answer(id string, at time.Time) taskAnswer {
	return taskAnswer{ID: id, At: at.UTC().Format(time.RFC3339Nano), AtMs: at.UnixMilli()}
}

func (s *Server) submit(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	var req taskRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	m, rcpt, err := s.check(req, s.now())
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%s", err.Error())
	}
	if err := s.blocked(r.Context(), req.ID, "submit"); err != nil {
		return 0, nil, err
	}
	if err := s.write(r.Context(), func(ctx context.Context) error { return s.c.Send(ctx, m) }); err != nil {
		return 0, nil, err
	}
	a := answer(rcpt.ID, rcpt.At)
	a.Input = rcpt.Input
	return http.StatusCreated, a, nil
}

// replace is PUT /v1/tasks/{id}: the body of a submit (its "id", if
// given, the path's), sent with delay-op: replace.
func (s *Server) replace(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req taskRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.ID != "" && req.ID != id {
		return 0, nil, fail(http.StatusBadRequest, `"id" %q is not the path's %q (leave it out)`, req.ID, id)
	}
	req.ID = id
	t, err := req.task(s.now(), s.maxDelay())
	if err != nil {
		return 0, nil, err
	}
	m, rcpt, err := s.c.Message(t)
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), delayq.ErrInvalid.Error()+": "))
	}
	m.Headers = append(m.Headers, kafka.Header{Key: payload.HeaderOp, Value: []byte(payload.OpReplace)})
	if _, err := payload.Decode(record.ToMessage(m), s.now(), s.cfg.Decode); err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%v", err)
	}
	if err := s.blocked(r.Context(), id, "replace"); err != nil {
		return 0, nil, err
	}
	if err := s.write(r.Context(), func(ctx context.Context) error { return s.c.Send(ctx, m) }); err != nil {
		return 0, nil, err
	}
	a := answer(rcpt.ID, rcpt.At)
	a.State, a.Input, a.Rule = "replace requested", rcpt.Input, ruleReplace
	return http.StatusAccepted, a, nil
}

// task turns the request into a client Task, its times and delays
// checked by payload's rules (the wire's) against now and maxDelay.
func (req *taskRequest) task(now time.Time, maxDelay time.Duration) (delayq.Task, error) {
	var reasons []string
	t := delayq.Task{ID: req.ID, Topic: req.Topic}
	if req.Topic == "" {
		reasons = append(reasons, `"topic" is required`)
	}
	at, after, err := dueTime(req.At, req.After, now, maxDelay)
	if err != nil {
		reasons = append(reasons, err.Error())
	}
	t.At = at
	if t.At.IsZero() {
		// "after": "0s" is due now; the client reads a zero After so.
		t.After = after
	}
	if req.Key != nil {
		t.Key = []byte(*req.Key)
	}
	switch {
	case req.Value != nil && req.ValueBase64 != nil:
		reasons = append(reasons, `give "value" or "value_base64", not both`)
	case req.Value != nil:
		t.Value = []byte(*req.Value)
	case req.ValueBase64 != nil:
		v, err := base64.StdEncoding.DecodeString(*req.ValueBase64)
		if err != nil {
			reasons = append(reasons, `"value_base64" is not standard base64`)
		}
		t.Value = v
	}
	for k, v := range req.Headers {
		t.Headers = append(t.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	if req.Every != "" {
		d, err := payload.ParseDelay(`"every"`, req.Every)
		if err == nil && d < payload.MinEvery {
			// A zero Every would be no series at all.
			err = fmt.Errorf(`"every": %q is under the minimum %v`, req.Every, payload.MinEvery)
		}
		if err != nil {
			reasons = append(reasons, err.Error())
		}
		t.Every = d
	}
	t.Cron, t.TZ, t.Count = req.Cron, req.TZ, int(req.Count)
	if given(req.Until) {
		ms, err := parseDue(`"until"`, req.Until)
		if err != nil {
			reasons = append(reasons, err.Error())
		} else {
			t.Until = time.UnixMilli(ms)
		}
	}
	if req.ExpireAfter != "" {
		d, err := payload.ParseDelay(`"expire_after"`, req.ExpireAfter)
		if err == nil && d == 0 {
			err = fmt.Errorf(`"expire_after": %q is zero: give a delay above zero such as 5m`, req.ExpireAfter)
		}
		if err != nil {
			reasons = append(reasons, err.Error())
		}
		t.ExpireAfter = d
	}
	if len(reasons) > 0 {
		return t, fail(http.StatusBadRequest, "%s", strings.Join(reasons, "; "))
	}
	return t, nil
}

// given reports whether a JSON field was given: present and not null.
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// parseDue reads a due time (the field name) given as unix milliseconds,
// a JSON number or string of digits, or an RFC 3339 string, by the wire's
// rule (payload.ParseDueTime: not before 1973-03-03, a number that looks
// like unix seconds named as such).
func parseDue(name string, raw json.RawMessage) (int64, error) {
	v := string(raw)
	if strings.HasPrefix(v, `"`) {
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, fmt.Errorf("%s: want an RFC 3339 string or unix milliseconds", name)
		}
	}
	return payload.ParseDueTime(name, v)
}

// dueTime reads "at" and "after" (the fields of a submit, a replace and a
// reschedule): exactly one, by the wire's rules, at most maxDelay ahead
// of now. It returns the due time, or the delay.
func dueTime(rawAt json.RawMessage, rawAfter string, now time.Time, maxDelay time.Duration) (time.Time, time.Duration, error) {
	switch {
	case given(rawAt) && rawAfter != "":
		return time.Time{}, 0, errors.New(`give "at" or "after", not both`)
	case given(rawAt):
		ms, err := parseDue(`"at"`, rawAt)
		if err == nil {
			err = payload.CheckAhead(`"at"`, ms, now, maxDelay)
		}
		if err != nil {
			return time.Time{}, 0, err
		}
		return time.UnixMilli(ms), 0, nil
	case rawAfter != "":
		d, err := payload.ParseDelay(`"after"`, rawAfter)
		if err == nil {
			err = payload.CheckDelay(`"after"`, d, maxDelay)
		}
		return time.Time{}, d, err
	}
	return time.Time{}, 0, errors.New(`"at" or "after" is required ("after": "0s" is due now)`)
}

// write runs a Kafka write bounded by WriteTimeout: a write that fails is
// 503 (the caller retries), a request the client refuses 400.
func (s *Server) write(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	err := fn(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, delayq.ErrInvalid):
		_, reason, _ := strings.Cut(err.Error(), delayq.ErrInvalid.Error()+": ")
		return fail(http.StatusBadRequest, "%s", reason)
	default:
		return unavailable("kafka did not take the request (delay-input): try again", err)
	}
}

// rescheduleRequest is the body of PATCH /v1/tasks/{id}.
type rescheduleRequest struct {
	At    json.RawMessage `json:"at"`
	After string          `json:"after"`
}

func (s *Server) reschedule(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req rescheduleRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	now := s.now()
	at, after, err := dueTime(req.At, req.After, now, s.maxDelay())
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "a reschedule: %v", err)
	}
	if at.IsZero() {
		at = now.Add(after)
	}
	if err := s.write(r.Context(), func(ctx context.Context) error { return s.c.Reschedule(ctx, id, at) }); err != nil {
		return 0, nil, err
	}
	a := answer(id, time.UnixMilli(at.UnixMilli()))
	a.State, a.Rule = "reschedule requested", ruleReschedule
	return http.StatusAccepted, a, nil
}

func (s *Server) maxDelay() time.Duration {
	if s.cfg.Decode.MaxDelay > 0 {
		return s.cfg.Decode.MaxDelay
	}
	return payload.DefaultMaxDelay
}

func (s *Server) cancel(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	if err := s.write(r.Context(), func(ctx context.Context) error { return s.c.CancelByID(ctx, id) }); err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, taskAnswer{ID: id, State: "cancel requested", Rule: ruleCancel}, nil
}

func (s *Server) get(_ http.ResponseWriter, r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	if s.states == nil {
		return 0, nil, fail(http.StatusNotImplemented, "this delayd has no task store to look ids up in")
	}
	if len(id) > payload.MaxNameLen {
		return 0, nil, fail(http.StatusBadRequest, "id is %d bytes, over the %d-byte limit", len(id), payload.MaxNameLen)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	st, err := s.states.State(ctx, id)
	if err != nil {
		return 0, nil, unavailable("the payload store did not answer: try again", err)
	}
	if st.Phase == payload.PhaseUnknown {
		return 0, nil, fail(http.StatusNotFound, "unknown id %q (never submitted, or expired after the retention window)", id)
	}
	a := answer(id, time.UnixMilli(st.At))
	a.State = string(st.Phase)
	if st.CancelledByID == 0 {
		return http.StatusOK, a, nil
	}
	// Cancelled by id alone: the block, and what the due time is of.
	c := cancelledAnswer{taskAnswer: a, CancelledByIDAt: rfc3339(st.CancelledByID), BlockedUntil: rfc3339(st.BlockedUntil),
		BlockedUntilMs: st.BlockedUntil}
	switch {
	case st.At == 0:
		c.At, c.AtMs = "", 0
		c.Task = "none: no task with this id was stored; the id is blocked"
	case st.Reused:
		c.Task = "the due time is that of a submit recorded after the cancel (refused as a reuse, or cancelled): never delivered"
	default:
		c.Task = "the due time is that of the task the cancel cancelled: never delivered"
	}
	if st.BlockedUntil > s.now().UnixMilli() {
		c.Rule = fmt.Sprintf("cancelled by id alone: a submit or replace of this id recorded before %s is refused (409 here, delay-failed with \"id cancelled\" on Kafka)", c.BlockedUntil)
	}
	return http.StatusOK, c, nil
}

// cancelledAnswer is GET /v1/tasks/{id} of an id cancelled by id alone.
type cancelledAnswer struct {
	taskAnswer
	CancelledByIDAt string `json:"cancelled_by_id_at"` // the cancel's record time
	BlockedUntil    string `json:"blocked_until"`      // when the id may be submitted again
	BlockedUntilMs  int64  `json:"blocked_until_ms"`
	Task            string `json:"task"` // what "at" is the due time of, or that there is none
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// blocked refuses (409) a submit or replace (op) of id while a cancel by
// id alone blocks it: ingest would refuse it to delay-failed ("id
// cancelled"). The answer names the rule and the block's end. Without an
// id, a store, or when the store does not answer, it lets the request
// through: ingest still refuses a reuse, visibly, in delay-failed.
func (s *Server) blocked(ctx context.Context, id, op string) error {
	if id == "" || s.states == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	st, err := s.states.State(ctx, id)
	if err != nil {
		s.log.Warn("id not checked for a cancel by id", "op", op, "err", err)
		return nil
	}
	if st.Phase != payload.PhaseCancelled || st.BlockedUntil <= s.now().UnixMilli() {
		return nil
	}
	return fail(http.StatusConflict,
		"id cancelled: %s of id %q refused: it was cancelled by id alone at %s, and an id cancelled by id alone is not reused for --max-delay + --retention after the cancel: it is blocked until %s (submit under another id)",
		op, id, rfc3339(st.CancelledByID), rfc3339(st.BlockedUntil))
}
