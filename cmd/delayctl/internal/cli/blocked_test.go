package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// TestSubmitBlockedID: the docs' o-42 after a cancel by id alone. submit
// and replace through --api refuse an id the cancel still blocks (exit 1,
// the rule and the block's end), before writing to Kafka, and let another
// id through to Kafka; inspect shows the block, also for an id with no task.
func TestSubmitBlockedID(t *testing.T) {
	due := testNow.Add(-time.Minute).UnixMilli()
	cancelled := testNow.Add(-30 * time.Second).UnixMilli()
	until := payload.FormatTime(cancelled + payload.DefaultCancelBlock.Milliseconds())
	o42 := payload.Task{ID: payload.TaskID("o-42"), Name: "o-42", Topic: "orders", ExecAt: due, Value: []byte("v")}
	url := apiServer(t, "", []payload.IDWrite{
		{ID: o42.ID, Name: "o-42", Cancel: true, CancelRecorded: cancelled},
		{ID: payload.TaskID("bare"), Name: "bare", Cancel: true, CancelRecorded: cancelled},
	}, o42)
	env := map[string]string{"DELAYQ_API": url}

	for _, args := range [][]string{
		{"submit", "--brokers", "127.0.0.1:1", "--topic", "orders", "--id", "o-42", "--after", "5s", "v"},
		{"replace", "--brokers", "127.0.0.1:1", "--topic", "orders", "--id", "o-42", "--after", "5s", "v"},
		{"submit", "--brokers", "127.0.0.1:1", "--topic", "orders", "--id", "bare", "--after", "5s", "v"},
	} {
		_, errOut, code := run(t, env, "", args...)
		if code != ExitFailure || !strings.Contains(errOut, "id cancelled: "+args[0]) || !strings.Contains(errOut, "blocked until "+until) ||
			!strings.Contains(errOut, "--max-delay + --retention") || strings.Contains(errOut, "kafka") {
			t.Errorf("%v: exit %d, %q; want 1, id cancelled, blocked until %s, before Kafka", args, code, errOut, until)
		}
	}
	_, errOut, code := run(t, env, "", "submit", "--brokers", "127.0.0.1:1", "--topic", "orders", "--id", "o-43", "--after", "5s", "v")
	if code != ExitFailure || !strings.Contains(errOut, "kafka unreachable") {
		t.Errorf("submit of a free id: exit %d, %q; want it checked, then sent to Kafka (unreachable here)", code, errOut)
	}
	_, errOut, code = run(t, env, "", "submit", "--brokers", "127.0.0.1:1", "--id-check=false", "--topic", "orders", "--id", "o-42", "--after", "5s", "v")
	if code != ExitFailure || !strings.Contains(errOut, "kafka unreachable") {
		t.Errorf("submit --id-check=false: exit %d, %q; want no check, sent to Kafka", code, errOut)
	}

	out, errOut, code := run(t, env, "", "inspect", "--id", "o-42")
	if code != 0 || !strings.Contains(out, "state      cancelled") || !strings.Contains(out, "blocked    until "+until+" (from delayd's API)") ||
		!strings.Contains(out, "task       the due time is that of the task the cancel cancelled") {
		t.Errorf("inspect o-42: exit %d, %q\n%s", code, errOut, out)
	}
	out, errOut, code = run(t, env, "", "inspect", "--id", "bare")
	if code != 0 || !strings.Contains(out, "due        (none: no task with this id was stored)") || !strings.Contains(out, "blocked    until "+until) {
		t.Errorf("inspect of a blocked id with no task: exit %d, %q\n%s", code, errOut, out)
	}
}
