package grafana

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"gopkg.in/yaml.v3"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Type       string     `json:"type"`
			Query      string     `json:"query"`
			Datasource datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int        `json:"id"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		Datasource datasource `json:"datasource"`
		Expr       string     `json:"expr"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("dashboards/delayq.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboards/delayq.json: %v", err)
	}
	return d
}

// TestDashboardShape: every panel and variable queries the datasource the
// dashboard's ${datasource} variable picks (a Prometheus), so it imports
// into any Grafana as it is; ids are unique, no panel is empty.
func TestDashboardShape(t *testing.T) {
	var ds struct {
		Datasources []datasource `yaml:"datasources"`
	}
	b, err := os.ReadFile("provisioning/datasources/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &ds); err != nil || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("provisioning/datasources/prometheus.yml: %v, want one prometheus datasource: %+v", err, ds.Datasources)
	}
	raw, err := os.ReadFile("dashboards/delayq.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), ds.Datasources[0].UID) {
		t.Errorf("dashboards/delayq.json names the provisioned datasource uid %q: another Grafana lacks it", ds.Datasources[0].UID)
	}
	want := datasource{Type: "prometheus", UID: "${datasource}"}
	d := readDashboard(t)
	if d.UID == "" || len(d.Panels) < 10 {
		t.Fatalf("dashboard uid %q with %d panels", d.UID, len(d.Panels))
	}
	vars := d.Templating.List
	if len(vars) == 0 || vars[0].Name != "datasource" || vars[0].Type != "datasource" || vars[0].Query != "prometheus" {
		t.Fatalf("first template variable %+v, want datasource of type datasource, query prometheus", vars)
	}
	for _, v := range vars[1:] {
		if v.Type == "query" && v.Datasource != want {
			t.Errorf("variable %s: datasource %+v, want %+v", v.Name, v.Datasource, want)
		}
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Datasource != want {
			t.Errorf("panel %q: datasource %+v, want %+v", p.Title, p.Datasource, want)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != want || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %+v", p.Title, tg)
			}
		}
	}
}

// metricName matches the series names of PromQL expressions delayd
// exports (Prometheus's own `up` is not delayd's).
var metricName = regexp.MustCompile(`\b(delayq_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+)\b`)

// queried returns every metric name the dashboard's panels and the alert
// rules query, with where each is queried.
func queried(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				out[m] = "dashboard panel " + strconv.Quote(p.Title)
			}
		}
	}
	b, err := os.ReadFile("../prometheus/rules/delayq.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				out[m] = "alert " + r.Alert
			}
		}
	}
	return out
}

// onlyAfterAnError are metric vectors with no series until a call fails,
// which an embedded delayd never does (or, delayq_topic_paused, until a
// topic is paused); the test checks instead that the named file defines
// them.
var onlyAfterAnError = map[string]string{
	"delayq_store_errors_total": "../../internal/metric/metric.go",
	"delayq_topic_paused":       "../../scanner/control.go",
}

// TestQueriedMetricsExist runs an embedded delayd, delivers a task and
// fails a message, and checks that every metric the dashboard and the
// alert rules query is in its /metrics.
func TestQueriedMetricsExist(t *testing.T) {
	want := queried(t)
	if len(want) < 15 {
		t.Fatalf("found only %d metric names in the dashboard and rules: %v", len(want), want)
	}
	for m, file := range onlyAfterAnError {
		delete(want, m)
		b, err := os.ReadFile(file)
		if err != nil || !strings.Contains(string(b), strconv.Quote(m)) {
			t.Errorf("%s: no longer defined in %s (%v)", m, file, err)
		}
	}
	ln := e2etest.Listen(t)
	broker, _ := e2etest.Embedded(t, daemon.Config{
		Brokers: []string{"127.0.0.1:0"}, Redis: "127.0.0.1:0", Tick: time.Second, Partitions: 2, Console: true,
	}, daemon.Options{Listener: ln})
	// delayd creates its topics once Kafka is up, and its writers create
	// none: write only once it is ready.
	e2etest.WaitReady(t, ln.Addr().String(), 60*time.Second)
	w := producer.New(producer.Config{Brokers: []string{broker}})
	defer w.Close()
	wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer wcancel()
	err := w.WriteMessages(wctx,
		kafka.Message{Topic: topics.Input, Key: []byte("k"), Value: []byte("v"), Headers: []kafka.Header{
			{Key: payload.HeaderTopic, Value: []byte("grafana-test")}, {Key: payload.HeaderAfter, Value: []byte("1s")}}},
		kafka.Message{Topic: topics.Input, Key: []byte("bad"), Headers: []kafka.Header{{Key: payload.HeaderAfter, Value: []byte("1s")}}},
	)
	if err != nil {
		t.Fatal(err)
	}

	// The dispatcher exports pending_tasks on the first tick of every
	// minute: up to a minute.
	url := "http://" + ln.Addr().String() + "/metrics"
	var missing []string
	for deadline := time.Now().Add(100 * time.Second); ; {
		have, err := scrape(url)
		if err != nil {
			t.Fatal(err)
		}
		missing = missing[:0]
		for m, where := range want {
			if !have[m] {
				missing = append(missing, fmt.Sprintf("%s (%s)", m, where))
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	slices.Sort(missing)
	t.Errorf("queried but not in delayd's /metrics:\n  %s", strings.Join(missing, "\n  "))
}

// scrape returns the series names of a /metrics page, histogram
// _bucket/_sum/_count included.
func scrape(url string) (map[string]bool, error) {
	res, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	have := map[string]bool{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			have[line[:i]] = true
		}
	}
	return have, sc.Err()
}

// TestComposeProvisions: docker-compose.yml runs Prometheus with
// deploy/prometheus and Grafana with these provisioning files, and the
// dashboard provider reads where the dashboards are mounted.
func TestComposeProvisions(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	b, err = os.ReadFile("provisioning/dashboards/delayq.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &p); err != nil || len(p.Providers) != 1 {
		t.Fatalf("provisioning/dashboards/delayq.yml: %v", err)
	}
	for svc, mount := range map[string]string{
		"prometheus": "./deploy/prometheus:/etc/prometheus:ro",
		"grafana":    "./deploy/grafana/dashboards:" + p.Providers[0].Options.Path + ":ro",
	} {
		if !slices.Contains(c.Services[svc].Volumes, mount) {
			t.Errorf("docker-compose.yml: service %s does not mount %s (has %v)", svc, mount, c.Services[svc].Volumes)
		}
	}
	if !slices.Contains(c.Services["grafana"].Volumes, "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro") {
		t.Error("docker-compose.yml: grafana does not mount deploy/grafana/provisioning")
	}
}
