package envflag

import (
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
