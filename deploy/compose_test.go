package deploy

import (
	"encoding/xml"
	"os"
	"path/filepath"
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
	} `yaml:"services"`
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

// TestComposeMatchesLocalStack keeps docker-compose.yml and deploy/local in
// step: the same services, Kafka version and ports.
func TestComposeMatchesLocalStack(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
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
