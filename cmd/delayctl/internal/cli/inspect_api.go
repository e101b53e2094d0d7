package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// inspectAPI is inspect through delayd's HTTP API: the task's state and
// due time from GET /v1/tasks/{id} (unless at is given), its row from the
// listing of that millisecond. The API does not say whether Redis still
// indexes it: pending is its state.
func inspectAPI(ctx context.Context, c *apiClient, id string, at int64, hasAt bool) (inspection, error) {
	ref := payload.Ref{ID: payload.TaskID(id), ExecAt: at}
	in := inspection{ID: id, ID64: strconv.FormatUint(ref.ID, 10), Table: "(through the API at " + c.base.Host + ")"}
	if !hasAt {
		var st struct {
			State     string `json:"state"`
			AtMs      int64  `json:"at_ms"`
			Cancelled string `json:"cancelled_by_id_at"`
			Until     int64  `json:"blocked_until_ms"`
			Task      string `json:"task"`
		}
		if err := c.get(ctx, "/v1/tasks/"+url.PathEscape(id), nil, &st); err != nil {
			if errors.Is(err, errAPINotFound) {
				return in, fmt.Errorf("no task with id %q (give --at for a task stored before ids were tracked)", id)
			}
			return in, err
		}
		ref.ExecAt, in.State = st.AtMs, st.State
		if st.Until != 0 {
			in.setBlock(&idBlock{Cancelled: st.Cancelled, Until: time.UnixMilli(st.Until), Exact: true, Task: st.Task})
		}
		if ref.ExecAt == 0 && in.BlockedUntil != "" {
			in.Due = payload.FormatTime(0)
			return in, nil // no task stored: nothing to list
		}
	}
	in.ExecAt, in.Due = ref.ExecAt, payload.FormatTime(ref.ExecAt)
	q := url.Values{"state": {string(find.StateAny)}, "from": {strconv.FormatInt(ref.ExecAt, 10)},
		"to": {strconv.FormatInt(ref.ExecAt+1, 10)}, "limit": {strconv.Itoa(find.MaxLimit)}}
	for {
		var p find.View
		if err := c.get(ctx, "/v1/tasks", q, &p); err != nil {
			return in, err
		}
		for _, t := range p.Tasks {
			if t.ID != id && payload.TaskID(t.ID) != ref.ID {
				continue
			}
			in.Stored, in.Topic, in.Payload = true, t.Topic, t.ValueBytes
			in.Cancelled = t.State == string(payload.PhaseCancelled)
			in.Pending = t.State == string(payload.PhasePending)
			in.Key = t.Key
			if t.KeyBase64 != nil {
				k := "base64:" + *t.KeyBase64
				in.Key = &k
			}
			for k, v := range t.Headers {
				in.Headers = append(in.Headers, header{Key: k, Value: v})
			}
			slices.SortFunc(in.Headers, func(a, b header) int { return strings.Compare(a.Key, b.Key) })
			return in, nil
		}
		if p.Next == "" {
			return in, nil
		}
		q.Set("cursor", p.Next)
	}
}
