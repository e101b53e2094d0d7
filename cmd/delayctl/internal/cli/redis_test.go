package cli

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// The --redis-* flags and their DELAYQ_* variables reach the client: a
// Redis that requires a password answers backlog only with it, and the
// password never shows in the output. Bad Redis flags are usage errors.
func TestRedisFlags(t *testing.T) {
	const secret = "hunter2-redis"
	mr := miniredis.RunT(t)
	mr.RequireAuth(secret)

	_, stderr, code := run(t, nil, "", "backlog", "--redis", mr.Addr())
	if code != ExitFailure || !strings.Contains(stderr, "redis unreachable at "+mr.Addr()) {
		t.Errorf("without a password: exit %d, stderr %q", code, stderr)
	}
	for name, env := range map[string]map[string]string{
		"flag": nil,
		"env":  {"DELAYQ_REDIS_PASSWORD": secret},
	} {
		args := []string{"backlog", "--redis", mr.Addr()}
		if env == nil {
			args = append(args, "--redis-password", secret)
		}
		stdout, stderr, code := run(t, env, "", args...)
		if code != ExitOK {
			t.Errorf("password by %s: exit %d, stderr %q", name, code, stderr)
		}
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("password by %s: printed: %q %q", name, stdout, stderr)
		}
	}

	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no port", nil, []string{"--redis", "redis-1"}, `"redis-1" is not host:port`},
		{"seed twice", nil, []string{"--redis", "a:1,a:1"}, `"a:1" given twice`},
		{"master and cluster", nil, []string{"--redis-master", "m", "--redis-cluster"}, "exclude each other"},
		{"user without password", map[string]string{"DELAYQ_REDIS_USERNAME": "u"}, nil, `username "u" without a password`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, tt.env, "", append([]string{"backlog"}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, "--redis: ") || !strings.Contains(stderr, tt.want) ||
				strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line saying %q", code, stderr, tt.want)
			}
		})
	}
}
