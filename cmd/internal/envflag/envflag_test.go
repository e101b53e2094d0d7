package envflag

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		brokers string
		tick    time.Duration
		wantErr string
	}{
		{name: "defaults", brokers: "127.0.0.1:9092", tick: time.Minute},
		{name: "env", env: map[string]string{"DELAYQ_BROKERS": "a:1,b:2", "DELAYQ_TICK": "1s"}, brokers: "a:1,b:2", tick: time.Second},
		{name: "flag beats env", args: []string{"--tick", "5s"}, env: map[string]string{"DELAYQ_TICK": "1s"}, brokers: "127.0.0.1:9092", tick: 5 * time.Second},
		{name: "bad env names variable", env: map[string]string{"DELAYQ_TICK": "soon"}, wantErr: `DELAYQ_TICK="soon"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			brokers := List{"127.0.0.1:9092"}
			fs.Var(&brokers, "brokers", "")
			tick := fs.Duration("tick", time.Minute, "")
			err := Parse(fs, tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if brokers.String() != tc.brokers || *tick != tc.tick {
				t.Fatalf("got brokers %q tick %v, want %q %v", brokers.String(), *tick, tc.brokers, tc.tick)
			}
		})
	}
}

func TestVar(t *testing.T) {
	if got := Var("hbase-zk"); got != "DELAYQ_HBASE_ZK" {
		t.Fatalf("Var(hbase-zk) = %q", got)
	}
}

// A refused flag or variable is one line naming it and the value, with
// what the flag takes and, for an unknown flag, the closest one.
func TestParseUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "typo", args: []string{"--embeded"}, want: `--embeded: unknown flag (did you mean --embedded?)`},
		{name: "single dash typo with value", args: []string{"-tik=1s"}, want: `--tik: unknown flag (did you mean --tick?)`},
		{name: "unique prefix", args: []string{"--max"}, want: `--max: unknown flag (did you mean --max-delay?)`},
		{name: "nothing close", args: []string{"--zzzzzz"}, want: `--zzzzzz: unknown flag`},
		{name: "bad duration", args: []string{"--tick", "banana"}, want: `--tick="banana": not a duration (like 1s, 500ms or 1m30s)`},
		{name: "bad bool", args: []string{"--embedded=maybe"}, want: `--embedded="maybe": not true or false`},
		{name: "bad int", args: []string{"--salts", "many"}, want: `--salts="many": not a whole number`},
		{name: "no value", args: []string{"--tick"}, want: `--tick: needs a value: a duration (like 1s, 500ms or 1m30s)`},
		{name: "bad env duration", env: map[string]string{"DELAYQ_TICK": "banana"}, want: `DELAYQ_TICK="banana": not a duration (like 1s, 500ms or 1m30s)`},
		{name: "bad env float", env: map[string]string{"DELAYQ_SLOW_RATE": "fast"}, want: `DELAYQ_SLOW_RATE="fast": not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.Duration("tick", time.Minute, "")
			fs.Duration("max-delay", time.Hour, "")
			fs.Bool("embedded", false, "")
			fs.Int("salts", 16, "")
			fs.Float64("slow-rate", 1000, "")
			err := Parse(fs, tc.args, func(k string) string { return tc.env[k] })
			var u *UsageError
			if !errors.As(err, &u) || err.Error() != tc.want {
				t.Fatalf("Parse(%q) = %v (%T), want *UsageError %q", tc.args, err, err, tc.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	for _, n := range []string{"redis", "redis-master", "repair-interval", "repair-lookback", "http"} {
		fs.Bool(n, false, "")
	}
	for name, want := range map[string]string{
		"rediss": "redis", "redis-mastr": "redis-master", "htp": "http",
		"repair": "", // begins two flags: no guess
		"kafka":  "",
	} {
		if got := Suggest(fs, name); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
}
