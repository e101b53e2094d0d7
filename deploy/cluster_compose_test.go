package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeClusterProfile keeps the compose file's "cluster" profile in
// step with `REDIS_CLUSTER=1 deploy/local/stack up`: three cluster-enabled
// masters with AOF on the stack's default cluster ports, joined without
// replicas by a one-shot service, and none of it in the default profile.
func TestComposeClusterProfile(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image    string   `yaml:"image"`
			Command  []string `yaml:"command"`
			Profiles []string `yaml:"profiles"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	stack, err := os.ReadFile("local/stack")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`REDIS_CLUSTER_PORTS=\$\{REDIS_CLUSTER_PORTS:-([0-9 ]+)\}`).FindSubmatch(stack)
	if m == nil {
		t.Fatal("deploy/local/stack: no REDIS_CLUSTER_PORTS default")
	}
	ports := strings.Fields(string(m[1]))
	if len(ports) != 3 {
		t.Fatalf("stack cluster ports %v, want three", ports)
	}
	var seeds []string
	for i, port := range ports {
		name := "redis-cluster-" + string(rune('1'+i))
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("service %s missing", name)
			continue
		}
		if !slices.Equal(s.Profiles, []string{"cluster"}) {
			t.Errorf("%s: profiles %v, want [cluster]", name, s.Profiles)
		}
		if !strings.HasPrefix(s.Image, "redis:7") {
			t.Errorf("%s: image %q, want redis:7", name, s.Image)
		}
		cmd := strings.Join(s.Command, " ")
		for _, want := range []string{"--port " + port, "--appendonly yes", "--cluster-enabled yes"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command %q lacks %q", name, cmd, want)
			}
		}
		seeds = append(seeds, "127.0.0.1:"+port)
	}
	init, ok := c.Services["redis-cluster-init"]
	if !ok {
		t.Fatal("service redis-cluster-init missing")
	}
	cmd := strings.Join(init.Command, " ")
	if !slices.Equal(init.Profiles, []string{"cluster"}) ||
		!strings.Contains(cmd, "--cluster create "+strings.Join(seeds, " ")+" --cluster-replicas 0") {
		t.Errorf("redis-cluster-init: profiles %v, command %q: want the cluster profile and a create of %v without replicas", init.Profiles, cmd, seeds)
	}
	for _, name := range []string{"kafka", "redis", "hbase"} {
		if p := c.Services[name].Profiles; len(p) != 0 {
			t.Errorf("%s: profiles %v, want none (default profile)", name, p)
		}
	}
}
