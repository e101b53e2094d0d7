package daemon

import (
	"errors"
	"strings"
	"testing"

	"github.com/delayq/delayq/internal/redisconn"
)

// The Redis flags reach redisconn, and its problems are Config problems.
func TestConfigRedis(t *testing.T) {
	c := Config{Redis: "10.0.0.1:7001, 10.0.0.2:7001,10.0.0.3:7001", RedisUsername: "u", RedisPassword: "p", RedisTLS: true}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	rc := c.redisConn()
	if rc.Mode() != redisconn.ModeCluster || len(rc.Addrs) != 3 || rc.Addrs[1] != "10.0.0.2:7001" ||
		rc.Username != "u" || rc.Password != "p" || !rc.TLS {
		t.Errorf("redisConn() = %#v (addrs %q)", rc, rc.Addrs)
	}
	if m := (&Config{Redis: "s1:26379,s2:26379", RedisMaster: "mymaster"}).redisConn().Mode(); m != redisconn.ModeSentinel {
		t.Errorf("with --redis-master: mode %s", m)
	}

	bad := Config{Redis: "redis-1,10.0.0.2:7001", RedisMaster: "m", RedisCluster: true}
	bad.setDefaults()
	err := bad.Validate()
	if !errors.Is(err, redisconn.ErrConfig) {
		t.Fatalf("Validate() = %v, want a redisconn.ErrConfig", err)
	}
	for _, want := range []string{`redis: `, `"redis-1" is not host:port`, "exclude each other"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}
