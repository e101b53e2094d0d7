package tenant

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"a", true},
		{"team-42", true},
		{"-", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"Team", false},
		{"a.b", false},
		{"a_b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	} {
		if got := Valid(c.name); got != c.ok {
			t.Errorf("Valid(%q) = %v, want %v", c.name, got, c.ok)
		}
		if err := CheckName(c.name); (err == nil) != c.ok || err != nil && !errors.Is(err, ErrName) {
			t.Errorf("CheckName(%q) = %v", c.name, err)
		}
	}
}

func TestTopicsOf(t *testing.T) {
	for _, c := range []struct {
		tenant string
		want   Topics
	}{
		{Default, Topics{"delay-input", "delay-input-slow", "delay-failed"}},
		{"a", Topics{"delay-input.a", "delay-input-slow.a", "delay-failed.a"}},
		{"team-42", Topics{"delay-input.team-42", "delay-input-slow.team-42", "delay-failed.team-42"}},
	} {
		got := TopicsOf(c.tenant)
		if got != c.want {
			t.Errorf("TopicsOf(%q) = %+v, want %+v", c.tenant, got, c.want)
		}
		for _, in := range []string{got.Input, got.Slow} {
			if tn, ok := OfInput(in); !ok || tn != c.tenant {
				t.Errorf("OfInput(%q) = %q, %v, want %q", in, tn, ok, c.tenant)
			}
			if !own(in) {
				t.Errorf("own(%q) = false", in)
			}
		}
		if _, ok := OfInput(got.Failed); ok {
			t.Errorf("OfInput(%q): a failed topic is no input", got.Failed)
		}
	}
}

func TestOfInput(t *testing.T) {
	for _, c := range []struct {
		topic, tenant string
		ok            bool
	}{
		{"delay-input", Default, true},
		{"delay-input-slow", Default, true},
		{"delay-input.b", "b", true},
		{"delay-input-slow.b", "b", true},
		{"delay-input.default", "", false}, // Default's topics have no suffix
		{"delay-input.", "", false},
		{"delay-input.B", "", false},
		{"delay-input.a.b", "", false},
		{"delay-inputx", "", false},
		{"delay-input-slowa", "", false},
		{"delay-failed.a", "", false},
		{"delay-scan", "", false},
		{"orders", "", false},
	} {
		tn, ok := OfInput(c.topic)
		if tn != c.tenant || ok != c.ok {
			t.Errorf("OfInput(%q) = %q, %v, want %q, %v", c.topic, tn, ok, c.tenant, c.ok)
		}
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       Rules
		err        string // a substring of the error; "" for none
	}{
		{name: "issue's example",
			body: `{"topics": ["orders", "billing-"], "max_delay": "720h", "max_pending": 1000000, "submit_per_second": 5000, "max_payload_bytes": 1048576}`,
			want: Rules{Topics: []string{"orders", "billing-"}, MaxDelay: Duration(720 * time.Hour), MaxPending: 1000000, SubmitPerSecond: 5000, MaxPayloadBytes: 1048576}},
		{name: "empty object: no rules", body: `{}`, want: Rules{}},
		{name: "only a quota", body: `{"max_pending": 5}`, want: Rules{MaxPending: 5}},
		{name: "empty topics list", body: `{"topics": []}`, want: Rules{Topics: []string{}}},
		{name: "unknown field", body: `{"max_pendings": 5}`, err: "unknown field"},
		{name: "duration as number", body: `{"max_delay": 3600}`, err: "max_delay"},
		{name: "bad duration", body: `{"max_delay": "3 days"}`, err: "max_delay"},
		{name: "trailing data", body: `{} {}`, err: "data after the object"},
		{name: "not an object", body: `[]`, err: "cannot unmarshal"},
		{name: "negative quotas, all reported",
			body: `{"max_pending": -1, "submit_per_second": -2, "max_payload_bytes": -3, "max_delay": "-1h"}`,
			err:  "max_delay: negative\nmax_pending: negative\nsubmit_per_second: negative\nmax_payload_bytes: negative"},
		{name: "internal topics", body: `{"topics": ["delay-input", "delay-failed.b", "__consumer_offsets", "delay-scan"]}`,
			err: `"delay-input" is an internal topic` + "\n" + `topics: "delay-failed.b" is an internal topic` + "\n" + `topics: "__consumer_offsets" is an internal topic` + "\n" + `topics: "delay-scan" is an internal topic`},
		{name: "illegal topic", body: `{"topics": ["or ders", "", ".."]}`, err: `"or ders" is not a topic name`},
		{name: "repeated topic", body: `{"topics": ["orders", "orders"]}`, err: `"orders" is listed twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode([]byte(c.body))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrRules) {
					t.Fatalf("Decode = %+v, %v; want an ErrRules error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalRules(got, c.want) {
				t.Fatalf("Decode = %+v, want %+v", got, c.want)
			}
		})
	}
}

func equalRules(a, b Rules) bool {
	if (a.Topics == nil) != (b.Topics == nil) || strings.Join(a.Topics, ",") != strings.Join(b.Topics, ",") {
		return false
	}
	return a.MaxDelay == b.MaxDelay && a.MaxPending == b.MaxPending &&
		a.SubmitPerSecond == b.SubmitPerSecond && a.MaxPayloadBytes == b.MaxPayloadBytes
}

// TestRoundTrip: rules written as JSON read back the same; an empty
// topics list stays empty (no topic), not absent (any topic).
func TestRoundTrip(t *testing.T) {
	for _, r := range []Rules{
		{},
		{Topics: []string{}},
		{Topics: []string{"orders", "billing-"}, MaxDelay: Duration(90 * time.Minute), MaxPending: 7, SubmitPerSecond: 3, MaxPayloadBytes: 9},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if !equalRules(got, r) || got.MayWrite("orders") != r.MayWrite("orders") {
			t.Fatalf("%s read back as %+v (topics %#v), want %+v (topics %#v)", b, got, got.Topics, r, r.Topics)
		}
	}
}

func TestMayWrite(t *testing.T) {
	list := Rules{Topics: []string{"orders", "billing-"}}
	none := Rules{Topics: []string{}}
	for _, c := range []struct {
		name  string
		rules Rules
		topic string
		ok    bool
	}{
		{"exact name", list, "orders", true},
		{"name is no prefix", list, "orders-eu", false},
		{"prefix", list, "billing-eu", true},
		{"prefix itself", list, "billing-", true},
		{"prefix needs its dash", list, "billing", false},
		{"other topic", list, "mail", false},
		{"case matters", list, "Orders", false},
		{"no list: any", Rules{}, "mail", true},
		{"empty list: none", none, "orders", false},
		{"no list: never own input", Rules{}, "delay-input", false},
		{"no list: never another tenant's input", Rules{}, "delay-input.b", false},
		{"no list: never another tenant's failed", Rules{}, "delay-failed.b", false},
		{"no list: never slow", Rules{}, "delay-input-slow.b", false},
		{"no list: never scan", Rules{}, "delay-scan", false},
		{"no list: never Kafka's", Rules{}, "__consumer_offsets", false},
		{"no list: not a topic name", Rules{}, "a b", false},
		{"a prefix cannot reach internal", Rules{Topics: []string{"delay-"}}, "delay-input.b", false},
		{"a prefix reaches others", Rules{Topics: []string{"delay-"}}, "delay-orders", true},
	} {
		if got := c.rules.MayWrite(c.topic); got != c.ok {
			t.Errorf("%s: MayWrite(%q) = %v, want %v", c.name, c.topic, got, c.ok)
		}
	}
}

func TestCheckDelay(t *testing.T) {
	r := Rules{MaxDelay: Duration(720 * time.Hour)}
	for _, c := range []struct {
		rules Rules
		d     time.Duration
		ok    bool
	}{
		{r, 720 * time.Hour, true},
		{r, 720*time.Hour + time.Millisecond, false},
		{r, 0, true},
		{Rules{}, 100000 * time.Hour, true},
	} {
		err := c.rules.CheckDelay(c.d)
		if (err == nil) != c.ok {
			t.Errorf("CheckDelay(%s) with max %s = %v", c.d, time.Duration(c.rules.MaxDelay), err)
		}
		if err != nil && !strings.Contains(err.Error(), "max_delay 720h0m0s") {
			t.Errorf("CheckDelay: %v does not name the limit", err)
		}
	}
}
