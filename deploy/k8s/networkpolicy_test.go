package k8s

import (
	"net"
	"testing"
)

// The NetworkPolicy admits to delayd's pods only Prometheus and the
// ingress controller, each by namespace and pod labels, and only on the
// port DELAYQ_HTTP listens on.
func TestNetworkPolicy(t *testing.T) {
	objs := load(t)
	var np struct {
		Kind string `yaml:"kind"`
		Spec struct {
			PodSelector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"podSelector"`
			PolicyTypes []string `yaml:"policyTypes"`
			Ingress     []struct {
				From []struct {
					NamespaceSelector *struct {
						MatchLabels map[string]string `yaml:"matchLabels"`
					} `yaml:"namespaceSelector"`
					PodSelector *struct {
						MatchLabels map[string]string `yaml:"matchLabels"`
					} `yaml:"podSelector"`
					IPBlock any `yaml:"ipBlock"`
				} `yaml:"from"`
				Ports []struct {
					Protocol string `yaml:"protocol"`
					Port     int    `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	readYAML(t, "base/networkpolicy.yaml", &np)
	if _, ok := objs["NetworkPolicy/delayd"]; !ok || np.Kind != "NetworkPolicy" {
		t.Fatal("want NetworkPolicy/delayd in the base")
	}
	dep := objs["Deployment/delayd"]
	if !labelsMatch(np.Spec.PodSelector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("podSelector %v does not select delayd's pods %v", np.Spec.PodSelector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != "Ingress" {
		t.Errorf("policyTypes %v, want [Ingress]", np.Spec.PolicyTypes)
	}
	_, port, _ := net.SplitHostPort(objs["ConfigMap/delayq-config"].Data["DELAYQ_HTTP"])
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("%d ingress rules, want one", len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	if len(rule.Ports) != 1 || itoa(rule.Ports[0].Port) != port || rule.Ports[0].Protocol != "TCP" {
		t.Errorf("ports %+v, want TCP %s (DELAYQ_HTTP)", rule.Ports, port)
	}
	want := map[string]bool{"prometheus": false, "ingress-nginx": false}
	for _, f := range rule.From {
		if f.IPBlock != nil || f.NamespaceSelector == nil || f.PodSelector == nil ||
			f.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "" {
			t.Errorf("peer %+v: want a namespace and a pod selector, no ipBlock", f)
			continue
		}
		name := f.PodSelector.MatchLabels["app.kubernetes.io/name"]
		if _, ok := want[name]; !ok {
			t.Errorf("peer %q admitted: only prometheus and the ingress controller may reach delayd", name)
		}
		want[name] = true
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no rule admits %s", name)
		}
	}
}
