package k8s

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// kustomizeBin finds kustomize where deploy/local/tools installs it; missing,
// it fails under CI=true and skips otherwise.
func kustomizeBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("kustomize"); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "kustomize")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("kustomize is not installed (CI=true, this test never skips): deploy/local/tools installs it")
	}
	t.Skip("kustomize is not installed: run deploy/local/tools (make test does)")
	return ""
}

// rendered is the part of a rendered object the checks read.
type rendered struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Ports []struct {
			Name string `yaml:"name"`
		} `yaml:"ports"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
		Template struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []struct {
					Image string `yaml:"image"`
					Ports []struct {
						ContainerPort int `yaml:"containerPort"`
					} `yaml:"ports"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// build renders the kustomization in dir.
func build(t *testing.T, bin, dir string) map[string]rendered {
	t.Helper()
	out, err := exec.Command(bin, "build", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, out)
	}
	objs := map[string]rendered{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o rendered
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
}

// checkout copies the files git tracks under deploy/ into a new directory,
// as a clean checkout has them: a file only this working tree has (a
// console-token.txt, a filled secrets.env) cannot make the render pass.
func checkout(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "--cached", "--", ".", "../prometheus").Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("git ls-files: %v (the test renders the tracked files, as a clean checkout has them)", err)
	}
	root := t.TempDir()
	for _, f := range strings.Fields(string(out)) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err) // tracked but deleted here
		}
		dst := filepath.Join(root, "k8s", f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "k8s")
}

// TestKustomize renders the base and the example overlay from a clean
// checkout: the overlay keeps every Secret key of the base (a merged
// secretGenerator once dropped all but its own), sets what it fills in,
// pins the image and puts everything in its namespace; the ServiceMonitor
// component selects delayd's Service.
func TestKustomize(t *testing.T) {
	bin := kustomizeBin(t)
	dir := checkout(t)
	base := build(t, bin, filepath.Join(dir, "base"))
	baseSecret, ok := base["Secret/delayq-secrets"]
	if !ok || len(baseSecret.Data) < 2 {
		t.Fatalf("base Secret/delayq-secrets: %+v", baseSecret)
	}
	baseKeys := slices.Sorted(maps.Keys(baseSecret.Data))
	t.Logf("base Secret keys: %v", baseKeys)

	overlay := filepath.Join(dir, "overlays", "example")
	objs := build(t, bin, overlay)
	sec := objs["Secret/delayq-secrets"]
	if got := slices.Sorted(maps.Keys(sec.Data)); !slices.Equal(got, baseKeys) || len(sec.StringData) > 0 {
		t.Errorf("overlay Secret keys %v (stringData %v), want the base's %v", got, sec.StringData, baseKeys)
	}
	for name, o := range objs {
		if o.Metadata.Namespace != "delayq" {
			t.Errorf("%s: namespace %q, want delayq", name, o.Metadata.Namespace)
		}
	}
	for _, name := range []string{"Deployment/delayd", "Job/delayctl-init"} {
		cs := objs[name].Spec.Template.Spec.Containers
		if len(cs) != 1 || cs[0].Image != "delayq/delayd:v0.1.0" {
			t.Errorf("%s: containers %+v, want image delayq/delayd:v0.1.0", name, cs)
		}
	}

	// A filled secrets.env that sets only the token keeps the password key.
	token := "0123456789abcdef-token"
	if err := os.WriteFile(filepath.Join(overlay, "secrets.env"), []byte("DELAYQ_CONSOLE_TOKEN="+token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sec = build(t, bin, overlay)["Secret/delayq-secrets"]
	if got := slices.Sorted(maps.Keys(sec.Data)); !slices.Equal(got, baseKeys) {
		t.Errorf("overlay Secret keys with only the token set: %v, want %v", got, baseKeys)
	}
	if v, _ := base64.StdEncoding.DecodeString(sec.Data["DELAYQ_CONSOLE_TOKEN"]); string(v) != token {
		t.Errorf("DELAYQ_CONSOLE_TOKEN = %q, want %q", v, token)
	}

	// The ServiceMonitor component, added as the overlay's comment says.
	kpath := filepath.Join(overlay, "kustomization.yaml")
	kb, err := os.ReadFile(kpath)
	if err != nil {
		t.Fatal(err)
	}
	const commented = "# components:\n#   - ../../components/servicemonitor\n"
	if !bytes.Contains(kb, []byte(commented)) {
		t.Fatalf("overlays/example/kustomization.yaml lacks the commented %q", commented)
	}
	kb = bytes.Replace(kb, []byte(commented), []byte("components:\n  - ../../components/servicemonitor\n"), 1)
	if err := os.WriteFile(kpath, kb, 0o644); err != nil {
		t.Fatal(err)
	}
	objs = build(t, bin, overlay)
	sm, ok := objs["ServiceMonitor/delayd"]
	svc := objs["Service/delayd"]
	if !ok || !labelsMatch(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) || sm.Metadata.Namespace != "delayq" {
		t.Fatalf("ServiceMonitor/delayd %+v does not select Service/delayd (labels %v)", sm, svc.Metadata.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" ||
		!slices.ContainsFunc(svc.Spec.Ports, func(p struct {
			Name string `yaml:"name"`
		}) bool {
			return p.Name == sm.Spec.Endpoints[0].Port
		}) {
		t.Errorf("ServiceMonitor endpoints %+v: want /metrics on a port of Service/delayd %+v", sm.Spec.Endpoints, svc.Spec.Ports)
	}
}

// TestKubernetesScrapeConfig applies deploy/prometheus/kubernetes.yml's
// relabeling (a Prometheus without the operator) to delayd's pod
// annotations: it must keep the pod and scrape /metrics on the container
// port. Debian's promtool, built without Kubernetes discovery, cannot
// check that file.
func TestKubernetesScrapeConfig(t *testing.T) {
	var cfg struct {
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
			Relabel []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        *string  `yaml:"regex"`
				Action       string   `yaml:"action"`
				Replacement  *string  `yaml:"replacement"`
				TargetLabel  string   `yaml:"target_label"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "../prometheus/kubernetes.yml", &cfg)
	if len(cfg.ScrapeConfigs) != 1 {
		t.Fatalf("kubernetes.yml: %d scrape configs, want 1", len(cfg.ScrapeConfigs))
	}
	var dep rendered
	readYAML(t, "base/deployment.yaml", &dep)
	labels := map[string]string{
		"__address__":                 "10.0.0.7",
		"__metrics_path__":            "/metrics-default",
		"__meta_kubernetes_pod_ip":    "10.0.0.7",
		"__meta_kubernetes_namespace": "delayq",
		"__meta_kubernetes_pod_name":  "delayd-0",
	}
	for k, v := range dep.Spec.Template.Metadata.Annotations {
		labels["__meta_kubernetes_pod_annotation_"+regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(k, "_")] = v
	}
	for _, r := range cfg.ScrapeConfigs[0].Relabel {
		vals := make([]string, len(r.SourceLabels))
		for i, l := range r.SourceLabels {
			vals[i] = labels[l]
		}
		re, repl := "(.*)", "$1"
		if r.Regex != nil {
			re = *r.Regex
		}
		if r.Replacement != nil {
			repl = *r.Replacement
		}
		m := regexp.MustCompile("^(?:" + re + ")$")
		src := strings.Join(vals, ";")
		switch r.Action {
		case "keep":
			if !m.MatchString(src) {
				t.Fatalf("relabel %+v drops delayd's pod (annotations %v)", r, dep.Spec.Template.Metadata.Annotations)
			}
		case "", "replace":
			if idx := m.FindStringSubmatchIndex(src); idx != nil {
				labels[r.TargetLabel] = string(m.ExpandString(nil, repl, src, idx))
			}
		default:
			t.Fatalf("relabel action %q: the test knows keep and replace", r.Action)
		}
	}
	port := dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	if want := "10.0.0.7:" + itoa(port); labels["__address__"] != want || labels["__metrics_path__"] != "/metrics" {
		t.Errorf("scrapes %s%s, want %s/metrics", labels["__address__"], labels["__metrics_path__"], want)
	}
}
