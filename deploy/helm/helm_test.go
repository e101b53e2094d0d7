package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// tool finds a command that deploy/local/tools installs into GOPATH/bin;
// missing, it fails under CI=true and skips otherwise.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (CI=true, this test never skips): deploy/local/tools installs it", name)
	}
	t.Skipf("%s is not installed: run deploy/local/tools (make test does)", name)
	return ""
}

// object is a rendered manifest, kept whole for comparisons.
type object map[string]any

func (o object) kind() string { return fmt.Sprint(o["kind"]) }

// get walks o along keys (map keys, or "0" for a list's first element).
func (o object) get(keys ...string) any {
	var cur any = map[string]any(o)
	for _, k := range keys {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			if len(c) == 0 {
				return nil
			}
			cur = c[0]
		default:
			return nil
		}
	}
	return cur
}

// decode splits a multi-document YAML stream into objects.
func decode(t *testing.T, what string, out []byte) []object {
	t.Helper()
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		// A plain map, so that nested mappings decode as map[string]any
		// (into a named map type yaml.v3 decodes them as that type).
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if o != nil {
			objs = append(objs, object(o))
		}
	}
}

func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

const production = "delayq/examples/production.yaml"

// TestLint: `helm lint --strict` passes with the defaults and the
// production example.
func TestLint(t *testing.T) {
	helm := tool(t, "helm")
	for _, values := range [][]string{nil, {"-f", production}} {
		out := run(t, helm, append([]string{"lint", "--strict", "delayq"}, values...)...)
		if !bytes.Contains(out, []byte("0 chart(s) failed")) {
			t.Errorf("helm lint %v:\n%s", values, out)
		}
	}
}

func template(t *testing.T, args ...string) []object {
	t.Helper()
	helm := tool(t, "helm")
	return decode(t, "helm template", run(t, helm, append([]string{"template", "delayq", "delayq", "--namespace", "delayq"}, args...)...))
}

func byKind(objs []object) map[string][]object {
	m := map[string][]object{}
	for _, o := range objs {
		m[o.kind()] = append(m[o.kind()], o)
	}
	return m
}

// TestTemplateMatchesKustomize: the default rendering holds what the
// kustomize base holds, object for object.
func TestTemplateMatchesKustomize(t *testing.T) {
	chart := byKind(template(t))
	base := byKind(decode(t, "kustomize build", run(t, tool(t, "kustomize"), "build", "../k8s/base")))

	for _, kind := range slices.Sorted(maps.Keys(base)) {
		if len(chart[kind]) != len(base[kind]) {
			t.Errorf("%s: the chart renders %d, the kustomize base %d", kind, len(chart[kind]), len(base[kind]))
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(chart)) {
		if len(base[kind]) == 0 {
			t.Errorf("%s: rendered by the chart's defaults, not in the kustomize base", kind)
		}
	}
	if t.Failed() {
		return
	}
	same := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: chart %v, kustomize base %v", what, got, want)
		}
	}

	cm, bcm := chart["ConfigMap"][0], base["ConfigMap"][0]
	same("ConfigMap data", withRoles(cm.get("data"), chart["Deployment"][0]), bcm.get("data"))

	sec, bsec := chart["Secret"][0], base["Secret"][0]
	same("Secret keys", keys(sec.get("data")), keys(bsec.get("data")))

	d, bd := chart["Deployment"][0], base["Deployment"][0]
	same("Deployment replicas", d.get("spec", "replicas"), bd.get("spec", "replicas"))
	same("Deployment strategy", d.get("spec", "strategy"), bd.get("spec", "strategy"))
	same("grace period", d.get("spec", "template", "spec", "terminationGracePeriodSeconds"), bd.get("spec", "template", "spec", "terminationGracePeriodSeconds"))
	for _, field := range []string{"readinessProbe", "livenessProbe", "lifecycle", "resources", "securityContext", "ports"} {
		same("container "+field, d.get("spec", "template", "spec", "containers", "0", field), bd.get("spec", "template", "spec", "containers", "0", field))
	}
	for _, a := range []string{"prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"} {
		same("pod annotation "+a, d.get("spec", "template", "metadata", "annotations", a), bd.get("spec", "template", "metadata", "annotations", a))
	}
	// The pod reads the chart's own ConfigMap and Secret.
	envFrom := fmt.Sprint(d.get("spec", "template", "spec", "containers", "0", "envFrom"))
	for _, name := range []any{cm.get("metadata", "name"), sec.get("metadata", "name")} {
		if !strings.Contains(envFrom, fmt.Sprint(name)) {
			t.Errorf("the Deployment's envFrom %s does not name %v", envFrom, name)
		}
	}
	// Every selector of the chart selects the Deployment's pods.
	podLabels, _ := d.get("spec", "template", "metadata", "labels").(map[string]any)
	for _, sel := range []struct {
		what string
		o    object
		path []string
	}{
		{"Deployment selector", d, []string{"spec", "selector", "matchLabels"}},
		{"Service selector", chart["Service"][0], []string{"spec", "selector"}},
		{"PodDisruptionBudget selector", chart["PodDisruptionBudget"][0], []string{"spec", "selector", "matchLabels"}},
		{"NetworkPolicy selector", chart["NetworkPolicy"][0], []string{"spec", "podSelector", "matchLabels"}},
	} {
		m, _ := sel.o.get(sel.path...).(map[string]any)
		if len(m) == 0 {
			t.Errorf("%s is empty", sel.what)
		}
		for k, v := range m {
			if podLabels[k] != v {
				t.Errorf("%s %s=%v does not match the pod labels %v", sel.what, k, v, podLabels)
			}
		}
	}
	same("Service ports", chart["Service"][0].get("spec", "ports"), base["Service"][0].get("spec", "ports"))
	same("PodDisruptionBudget maxUnavailable", chart["PodDisruptionBudget"][0].get("spec", "maxUnavailable"), base["PodDisruptionBudget"][0].get("spec", "maxUnavailable"))
	same("NetworkPolicy ingress", chart["NetworkPolicy"][0].get("spec", "ingress"), base["NetworkPolicy"][0].get("spec", "ingress"))
	same("NetworkPolicy types", chart["NetworkPolicy"][0].get("spec", "policyTypes"), base["NetworkPolicy"][0].get("spec", "policyTypes"))
	j, bj := chart["Job"][0], base["Job"][0]
	for _, field := range []string{"command", "securityContext"} {
		same("init Job "+field, j.get("spec", "template", "spec", "containers", "0", field), bj.get("spec", "template", "spec", "containers", "0", field))
	}
	same("init Job backoffLimit", j.get("spec", "backoffLimit"), bj.get("spec", "backoffLimit"))
}

// withRoles adds the DELAYQ_ROLES the chart sets on the Deployment (the
// base keeps it in its ConfigMap) to a ConfigMap's data.
func withRoles(data any, d object) any {
	m, _ := data.(map[string]any)
	out := maps.Clone(m)
	env, _ := d.get("spec", "template", "spec", "containers", "0", "env").([]any)
	for _, e := range env {
		if e, ok := e.(map[string]any); ok && e["name"] == "DELAYQ_ROLES" {
			out["DELAYQ_ROLES"] = e["value"]
		}
	}
	return out
}

func keys(m any) []string {
	mm, _ := m.(map[string]any)
	return slices.Sorted(maps.Keys(mm))
}

// TestTemplateProduction: the production example splits the roles into
// Deployments of their own, serves the API to the namespace it names,
// reads an existing Secret, and renders the alerts and the PodMonitor.
func TestTemplateProduction(t *testing.T) {
	objs := byKind(template(t, "-f", production))
	var values struct {
		Deployments []struct {
			Name, Roles string
			Replicas    int
		}
		Secrets struct {
			ExistingSecret string `yaml:"existingSecret"`
		}
	}
	b, err := os.ReadFile(production)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}

	roles := map[string]string{}
	for _, d := range objs["Deployment"] {
		env := fmt.Sprint(d.get("spec", "template", "spec", "containers", "0", "env"))
		roles[fmt.Sprint(d.get("metadata", "labels", "app.kubernetes.io/component"))] = env
		if img := fmt.Sprint(d.get("spec", "template", "spec", "containers", "0", "image")); img != "delayq/delayd:v1.0.0" {
			t.Errorf("image %s, want the pinned delayq/delayd:v1.0.0", img)
		}
		if ef := fmt.Sprint(d.get("spec", "template", "spec", "containers", "0", "envFrom")); !strings.Contains(ef, values.Secrets.ExistingSecret) {
			t.Errorf("envFrom %s does not name the existing Secret %s", ef, values.Secrets.ExistingSecret)
		}
	}
	if len(objs["Deployment"]) != len(values.Deployments) || len(objs["PodDisruptionBudget"]) != len(values.Deployments) {
		t.Errorf("%d Deployments and %d PodDisruptionBudgets for %d deployments", len(objs["Deployment"]), len(objs["PodDisruptionBudget"]), len(values.Deployments))
	}
	for _, d := range values.Deployments {
		if !strings.Contains(roles[d.Name], "value:"+d.Roles+"]") {
			t.Errorf("Deployment %s: env %q does not set DELAYQ_ROLES=%s", d.Name, roles[d.Name], d.Roles)
		}
	}
	if len(objs["Secret"]) != 0 {
		t.Errorf("the chart created %d Secrets beside the existing one", len(objs["Secret"]))
	}
	if ports := fmt.Sprint(objs["Service"][0].get("spec", "ports")); !strings.Contains(ports, "name:api") {
		t.Errorf("the Service does not serve the API: %s", ports)
	}
	ingress, _ := objs["NetworkPolicy"][0].get("spec", "ingress").([]any)
	if len(ingress) != 2 || !strings.Contains(fmt.Sprint(ingress[1]), "apps") || !strings.Contains(fmt.Sprint(ingress[1]), "port:8080") {
		t.Errorf("NetworkPolicy ingress: %v, want a second rule letting namespace apps reach 8080", ingress)
	}

	// The PrometheusRule holds deploy/prometheus's alerts, unchanged.
	var want struct {
		Groups any `yaml:"groups"`
	}
	rb, err := os.ReadFile("../prometheus/rules/delayq.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rb, &want); err != nil {
		t.Fatal(err)
	}
	if len(objs["PrometheusRule"]) != 1 || !reflect.DeepEqual(objs["PrometheusRule"][0].get("spec", "groups"), want.Groups) {
		t.Errorf("PrometheusRule groups differ from deploy/prometheus/rules/delayq.rules.yml")
	}
	pm := objs["PodMonitor"]
	if len(pm) != 1 || fmt.Sprint(pm[0].get("spec", "podMetricsEndpoints", "0", "path")) != "/metrics" ||
		fmt.Sprint(pm[0].get("metadata", "labels", "release")) != "kube-prometheus-stack" {
		t.Errorf("PodMonitor: %v", pm)
	}
}

// TestRulesCopy: the chart's copy of the alerts is deploy/prometheus's
// (Helm reads only files inside the chart).
func TestRulesCopy(t *testing.T) {
	a, err := os.ReadFile("../prometheus/rules/delayq.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("delayq/files/delayq.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("deploy/helm/delayq/files/delayq.rules.yml differs from deploy/prometheus/rules/delayq.rules.yml: copy it again")
	}
}
