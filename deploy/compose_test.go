package deploy

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		NetworkMode string            `yaml:"network_mode"`
		Build       struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		DependsOn dependsOn `yaml:"depends_on"`
		Profiles  []string  `yaml:"profiles"`
	} `yaml:"services"`
}

// dependsOn is compose's depends_on, a list of services or a map of them
// to conditions.
type dependsOn []string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			*d = append(*d, n.Content[i].Value)
		}
		return nil
	}
	return n.Decode((*[]string)(d))
}

type pom struct {
	Dependencies []struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
	} `xml:"dependencies>dependency"`
}

func readPOM(t *testing.T, path string) pom {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p pom
	if err := xml.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

func version(p pom, artifact string) string {
	for _, d := range p.Dependencies {
		if d.ArtifactID == artifact {
			return d.Version
		}
	}
	return ""
}

func readCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// TestComposeMatchesLocalStack keeps docker-compose.yml and deploy/local in
// step: the same services, Kafka version and ports.
func TestComposeMatchesLocalStack(t *testing.T) {
	c := readCompose(t)
	for _, name := range []string{"kafka", "redis", "hbase"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("docker-compose.yml: service %q missing", name)
		}
	}

	kafkaVersion := version(readPOM(t, "local/kafka/pom.xml"), "kafka_2.13")
	if want := "apache/kafka:" + kafkaVersion; c.Services["kafka"].Image != want {
		t.Errorf("kafka image = %q, want %q (deploy/local/kafka/pom.xml)", c.Services["kafka"].Image, want)
	}
	if l := c.Services["kafka"].Environment["KAFKA_ADVERTISED_LISTENERS"]; !strings.Contains(l, "127.0.0.1:9092") {
		t.Errorf("kafka advertises %q, want 127.0.0.1:9092", l)
	}
	if !strings.HasPrefix(c.Services["redis"].Image, "redis:7") {
		t.Errorf("redis image = %q, want redis:7", c.Services["redis"].Image)
	}
	if cmd := strings.Join(c.Services["redis"].Command, " "); !strings.Contains(cmd, "--port 6379") || !strings.Contains(cmd, "--appendonly yes") {
		t.Errorf("redis command %q: want --port 6379 and --appendonly yes", cmd)
	}

	hb := c.Services["hbase"].Build
	dockerfile, err := os.ReadFile(filepath.Join("..", hb.Context, hb.Dockerfile))
	if err != nil {
		t.Fatalf("hbase build: %v", err)
	}
	if !strings.Contains(string(dockerfile), "deploy/local/hbase/pom.xml") {
		t.Error("deploy/hbase/Dockerfile does not build from deploy/local/hbase/pom.xml, the jars deploy/local runs")
	}
	if v := version(readPOM(t, "local/hbase/pom.xml"), "hbase-server"); v != "2.6.4-hadoop3" {
		t.Errorf("hbase-server version = %q, want 2.6.4-hadoop3", v)
	}
	site, err := os.ReadFile("hbase/hbase-site.xml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(site), "<name>hbase.zookeeper.property.clientPort</name><value>2181</value>") {
		t.Error("deploy/hbase/hbase-site.xml: ZooKeeper client port is not 2181")
	}
}

// TestComposeDelayd: the delayd service runs the repository's image (the
// one deploy/k8s runs), built from the Dockerfile, after the three
// services, on the host network where delayd's defaults name them, and
// only when asked for: tests run their own delayds against the services.
func TestComposeDelayd(t *testing.T) {
	c := readCompose(t)
	d, ok := c.Services["delayd"]
	if !ok {
		t.Fatal("docker-compose.yml: no delayd service")
	}
	if d.Build.Context != "." || d.Build.Dockerfile != "Dockerfile" {
		t.Errorf("delayd builds %+v, want the repository's Dockerfile", d.Build)
	}
	if _, err := os.Stat(filepath.Join("..", d.Build.Context, d.Build.Dockerfile)); err != nil {
		t.Error(err)
	}
	if !strings.HasPrefix(d.Image, "delayq/delayd:") {
		t.Errorf("delayd image %q, want delayq/delayd (the image deploy/k8s runs)", d.Image)
	}
	for _, dep := range []string{"kafka", "redis", "hbase"} {
		if !slices.Contains(d.DependsOn, dep) {
			t.Errorf("delayd does not depend on %s (depends_on %v)", dep, d.DependsOn)
		}
	}
	if d.NetworkMode != "host" || len(d.Profiles) == 0 {
		t.Errorf("delayd: network_mode %q, profiles %v; want host and a profile", d.NetworkMode, d.Profiles)
	}
	for k := range d.Environment {
		if !strings.HasPrefix(k, "DELAYQ_") {
			t.Errorf("delayd environment %s: delayd reads DELAYQ_* only", k)
		}
	}
}
