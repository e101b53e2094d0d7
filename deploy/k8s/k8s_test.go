package k8s

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// object is the part of a manifest the checks read.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	Containers                    []struct {
		Command []string `yaml:"command"`
		EnvFrom []struct {
			ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
			SecretRef    *struct{ Name string } `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		Lifecycle      struct {
			PreStop struct {
				Sleep struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
	} `yaml:"containers"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

func load(t *testing.T) map[string]object {
	t.Helper()
	var k struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "base/kustomization.yaml", &k)
	files, _ := filepath.Glob("base/*.yaml")
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(k.Resources, b) {
			t.Errorf("%s is not listed in base/kustomization.yaml", f)
		}
	}
	objs := map[string]object{}
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join("base", r))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o object
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objs
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// flags builds the command and returns the DELAYQ_* variables its flags
// read, from its help.
func flags(t *testing.T, pkg string, help ...string) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	out, _ := exec.Command(bin, help...).CombinedOutput() // flag's -h exits 0 or 2
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--?([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		vars["DELAYQ_"+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_"))] = true
	}
	if len(vars) < 5 {
		t.Fatalf("%s %v: found only %v in its help:\n%s", pkg, help, vars, out)
	}
	return vars
}

// envOnly are variables delayd reads without a flag (a token on the
// command line would show in ps).
var envOnly = map[string]bool{"DELAYQ_CONSOLE_TOKEN": true}

func TestManifests(t *testing.T) {
	objs := load(t)
	delayd := flags(t, "github.com/delayq/delayq/cmd/delayd", "-h")
	delayctl := flags(t, "github.com/delayq/delayq/cmd/delayctl", "init", "--help")

	cm, ok := objs["ConfigMap/delayq-config"]
	sec, ok2 := objs["Secret/delayq-secrets"]
	dep, ok3 := objs["Deployment/delayd"]
	if !ok || !ok2 || !ok3 {
		t.Fatalf("want ConfigMap/delayq-config, Secret/delayq-secrets and Deployment/delayd; have %v", slices.Sorted(func(yield func(string) bool) {
			for k := range objs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	env := map[string]string{}
	for k, v := range cm.Data {
		env[k] = v
	}
	if len(sec.StringData) > 0 {
		t.Error("Secret/delayq-secrets: stringData; kustomize's merge of an overlay's secretGenerator drops it (use data)")
	}
	for k, v := range sec.Data {
		env[k] = v
	}
	for k := range env {
		if !delayd[k] && !envOnly[k] {
			t.Errorf("%s is no delayd flag's variable", k)
		}
	}
	for _, k := range []string{"DELAYQ_BROKERS", "DELAYQ_HBASE_ZK", "DELAYQ_TABLE", "DELAYQ_SALTS", "DELAYQ_PARTITIONS"} {
		if env[k] == "" || !delayctl[k] {
			t.Errorf("%s: must be set for delayd and read by delayctl init (set %q, delayctl reads it: %v)", k, env[k], delayctl[k])
		}
	}

	_, port, err := net.SplitHostPort(env["DELAYQ_HTTP"])
	if err != nil {
		t.Fatalf("DELAYQ_HTTP %q: %v", env["DELAYQ_HTTP"], err)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("delayd pod: %d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || port != itoa(c.Ports[0].ContainerPort) {
		t.Errorf("container ports %+v, want http on %s (DELAYQ_HTTP)", c.Ports, port)
	}
	for name, p := range map[string]*probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if p == nil || p.HTTPGet.Path != name || p.HTTPGet.Port != "http" {
			t.Errorf("probe %s: %+v", name, p)
		}
	}
	checkEnvFrom(t, "delayd", c.EnvFrom, objs)
	// The scanner's drain budget (10 s + 10 s + 5 s), the HTTP shutdown
	// (5 s) and the preStop pause, with room.
	if need := 25 + 5 + c.Lifecycle.PreStop.Sleep.Seconds + 15; pod.TerminationGracePeriodSeconds < need {
		t.Errorf("terminationGracePeriodSeconds %d < %d: a SIGTERM drain would be cut short", pod.TerminationGracePeriodSeconds, need)
	}
	if c.Lifecycle.PreStop.Sleep.Seconds < 1 {
		t.Error("no preStop pause: the pod still receives traffic when SIGTERM arrives")
	}
	if !labelsMatch(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Error("Deployment selector does not match its pods")
	}
	pdb, ok := objs["PodDisruptionBudget/delayd"]
	if !ok || !labelsMatch(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget/delayd missing or not selecting delayd's pods: %+v", pdb.Spec.Selector)
	}
	svc, ok := objs["Service/delayd"]
	if !ok || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != "http" {
		t.Errorf("Service/delayd: %+v", svc.Spec.Ports)
	}

	job, ok := objs["Job/delayctl-init"]
	if !ok || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("want Job/delayctl-init with one container")
	}
	jc := job.Spec.Template.Spec.Containers[0]
	if strings.Join(jc.Command, " ") != "delayctl init" {
		t.Errorf("Job command %q, want delayctl init", jc.Command)
	}
	checkEnvFrom(t, "delayctl-init", jc.EnvFrom, objs)
}

func checkEnvFrom(t *testing.T, who string, from []struct {
	ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
	SecretRef    *struct{ Name string } `yaml:"secretRef"`
}, objs map[string]object) {
	t.Helper()
	var cm, sec bool
	for _, f := range from {
		if f.ConfigMapRef != nil {
			_, cm = objs["ConfigMap/"+f.ConfigMapRef.Name]
		}
		if f.SecretRef != nil {
			_, sec = objs["Secret/"+f.SecretRef.Name]
		}
	}
	if !cm || !sec {
		t.Errorf("%s: envFrom must name the ConfigMap and the Secret of the base (configmap %v, secret %v)", who, cm, sec)
	}
}

func labelsMatch(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// TestImageMatchesManifests: the pods run the image `make image` and the
// Dockerfile make (delayq/delayd), as the user the image declares.
func TestImageMatchesManifests(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	user := regexp.MustCompile(`(?m)^USER (\d+)`).FindSubmatch(df)
	if user == nil {
		t.Fatal("Dockerfile: no numeric USER (runAsNonRoot needs a uid)")
	}
	mk, err := os.ReadFile("../../tools/image/main.go")
	if err != nil {
		t.Fatal(err)
	}
	repo := regexp.MustCompile(`"repository", "([^"]+)"`).FindSubmatch(mk)
	if repo == nil {
		t.Fatal("tools/image: no -repository default")
	}
	for _, f := range []string{"base/deployment.yaml", "base/job-init.yaml"} {
		var o struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image           string `yaml:"image"`
							SecurityContext struct {
								RunAsUser    int  `yaml:"runAsUser"`
								RunAsNonRoot bool `yaml:"runAsNonRoot"`
							} `yaml:"securityContext"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		readYAML(t, f, &o)
		for _, c := range o.Spec.Template.Spec.Containers {
			name, _, _ := strings.Cut(c.Image, ":")
			if name != string(repo[1]) || itoa(c.SecurityContext.RunAsUser) != string(user[1]) || !c.SecurityContext.RunAsNonRoot {
				t.Errorf("%s: image %s as user %d (non-root %v), want %s as the Dockerfile's USER %s",
					f, c.Image, c.SecurityContext.RunAsUser, c.SecurityContext.RunAsNonRoot, repo[1], user[1])
			}
		}
	}
}
