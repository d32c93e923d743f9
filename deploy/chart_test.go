package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chartValues is the path of one of the chart's example values files, as a
// --values flag for render.
func chartValues(f string) string {
	return "--values=" + filepath.Join("helm", "tether", "ci", f)
}

// A misspelt value is an error, not silently ignored: values.schema.json
// allows no key the chart does not read, at every level it owns.
func TestHelmChartRefusesUnknownValues(t *testing.T) {
	helm := findHelm(t)
	for _, tc := range []struct{ set, want string }{
		{"server.replcas=2", "'replcas' not allowed"},
		{"sever.replicas=2", "'sever' not allowed"},
		{"agent.drian=1m", "'drian' not allowed"},
		{"database.sqlite.persistence.sise=5Gi", "'sise' not allowed"},
		{"metrics.serviceMonitor.tlsConfig.insecureSkipVerify=true", "'insecureSkipVerify' not allowed"},
		{"server.logFormat=yaml", "logFormat"},
		{"agent.drain=500ms", "/agent/drain"},
		{"server.podDisruptionBudget.maxUnavailable=0", "maxUnavailable"},
	} {
		objs, out := render(t, helm, "--set", tc.set)
		if objs != nil || !strings.Contains(out, tc.want) {
			t.Errorf("helm template --set %s: want a refusal naming %q, got:\n%.400s", tc.set, tc.want, out)
		}
	}
	// helm lint --strict reads the same schema.
	if out, err := run(t, 2*time.Minute, helm, "lint", "--strict", filepath.Join("helm", "tether"), "--set", "server.replcas=2"); err == nil {
		t.Errorf("helm lint --strict passes a misspelt value:\n%s", out)
	}
	// Every example values file still passes.
	for _, f := range []string{"sqlite-values.yaml", "postgres-values.yaml", "agent-values.yaml", "agent-only-values.yaml"} {
		if objs, out := render(t, helm, chartValues(f)); objs == nil {
			t.Errorf("%s is refused:\n%s", f, out)
		}
	}
}

// Several replicas get a PodDisruptionBudget and are spread over nodes and
// zones; one replica gets neither (a budget of one replica with
// maxUnavailable 1 means nothing, and minAvailable 1 would block drains).
func TestHelmChartSpreadsReplicas(t *testing.T) {
	helm := findHelm(t)
	two, out := render(t, helm, chartValues("postgres-values.yaml"), "--set", "server.replicas=2")
	if two == nil {
		t.Fatalf("helm template failed:\n%s", out)
	}
	pdb := two["PodDisruptionBudget/t-tether"]
	if pdb == nil {
		t.Fatalf("no PodDisruptionBudget with 2 replicas:\n%s", out)
	}
	if m := pdb.get("spec", "maxUnavailable"); m != 1 {
		t.Errorf("maxUnavailable %v, want 1", m)
	}
	if c := pdb.get("spec", "selector", "matchLabels", "app.kubernetes.io/component"); c != "server" {
		t.Errorf("the budget selects %v, want the server's pods", pdb.get("spec", "selector"))
	}
	spread, _ := two["Deployment/t-tether"].get("spec", "template", "spec", "topologySpreadConstraints").([]any)
	keys := []string{}
	for _, c := range spread {
		m := manifest(c.(map[string]any))
		keys = append(keys, m.get("topologyKey").(string))
		if m.get("labelSelector", "matchLabels", "app.kubernetes.io/component") != "server" {
			t.Errorf("spread constraint %v does not select the server's pods", m)
		}
	}
	if strings.Join(keys, ",") != "kubernetes.io/hostname,topology.kubernetes.io/zone" {
		t.Errorf("spread over %v, want nodes and zones", keys)
	}

	pct, out := render(t, helm, chartValues("postgres-values.yaml"), "--set", "server.podDisruptionBudget.maxUnavailable=50%")
	if pct == nil || pct["PodDisruptionBudget/t-tether"].get("spec", "maxUnavailable") != "50%" {
		t.Errorf("maxUnavailable=50%% is not passed on:\n%.2000s", out)
	}

	for _, values := range [][]string{
		{chartValues("postgres-values.yaml"), "--set", "server.replicas=1"},
		{chartValues("sqlite-values.yaml")},
	} {
		one, out := render(t, helm, values...)
		if one == nil {
			t.Fatalf("helm template %v failed:\n%s", values, out)
		}
		if one["PodDisruptionBudget/t-tether"] != nil {
			t.Errorf("%v: a PodDisruptionBudget for one replica", values)
		}
		if c := one["Deployment/t-tether"].get("spec", "template", "spec", "topologySpreadConstraints"); c != nil {
			t.Errorf("%v: spread constraints for one replica: %v", values, c)
		}
	}
}

// The agent's pod may take as long as tether agent run takes to stop:
// drain, then kill grace, with time to spare; the chart passes both on.
func TestHelmChartAgentGracePeriod(t *testing.T) {
	helm := findHelm(t)
	for _, tc := range []struct {
		set  []string
		want int
	}{
		{nil, 30 + 10 + 15},
		{[]string{"--set", "agent.drain=2m", "--set", "agent.killGrace=20s"}, 120 + 20 + 15},
		{[]string{"--set", "agent.drain=1h1m1s", "--set", "agent.killGrace=1m"}, 3661 + 60 + 15},
	} {
		objs, out := render(t, helm, append([]string{chartValues("agent-values.yaml")}, tc.set...)...)
		if objs == nil {
			t.Fatalf("helm template %v failed:\n%s", tc.set, out)
		}
		d := objs["Deployment/t-tether-agent"]
		if g := d.get("spec", "template", "spec", "terminationGracePeriodSeconds"); g != tc.want {
			t.Errorf("%v: terminationGracePeriodSeconds %v, want %d", tc.set, g, tc.want)
		}
		args := strings.Join(toStrings(container(t, d, "containers", "agent")["args"]), " ")
		if !strings.Contains(args, "--drain=") || !strings.Contains(args, "--kill-grace=") {
			t.Errorf("%v: the agent's args %q lack --drain or --kill-grace", tc.set, args)
		}
	}
}

// GOMEMLIMIT sits a little below each Go container's memory limit: the
// server's and the agent's. Without a limit, or with one in extraEnv, the
// chart sets none.
func TestHelmChartGoMemLimit(t *testing.T) {
	helm := findHelm(t)
	goMemLimit := func(set []string, deployment, name string) (any, int) {
		t.Helper()
		objs, out := render(t, helm, append([]string{chartValues("agent-values.yaml")}, set...)...)
		if objs == nil {
			t.Fatalf("helm template %v failed:\n%s", set, out)
		}
		c := container(t, objs[deployment], "containers", name)
		n := 0
		for _, e := range c["env"].([]any) {
			if e.(map[string]any)["name"] == "GOMEMLIMIT" {
				n++
			}
		}
		return envOf(c)["GOMEMLIMIT"], n
	}
	for _, tc := range []struct {
		set        []string
		deployment string
		container  string
		want       any
	}{
		{nil, "Deployment/t-tether", "tether", "460MiB"}, // 90% of 512Mi
		{nil, "Deployment/t-tether-agent", "agent", "460MiB"},
		{[]string{"--set", "agent.resources.limits.memory=1Gi"}, "Deployment/t-tether-agent", "agent", "921MiB"},
		{[]string{"--set", "agent.resources.limits.memory=1.5G"}, "Deployment/t-tether-agent", "agent", "1287MiB"},
		{[]string{"--set", "server.resources.limits.memory=2Gi"}, "Deployment/t-tether", "tether", "1843MiB"},
		{[]string{"--set", "agent.resources.limits=null"}, "Deployment/t-tether-agent", "agent", nil},
		{[]string{"--set", "server.resources.limits=null"}, "Deployment/t-tether", "tether", nil},
		{[]string{"--set", "agent.extraEnv[0].name=GOMEMLIMIT", "--set", "agent.extraEnv[0].value=300MiB"}, "Deployment/t-tether-agent", "agent", "300MiB"},
		{[]string{"--set", "server.extraEnv[0].name=GOMEMLIMIT", "--set", "server.extraEnv[0].value=300MiB"}, "Deployment/t-tether", "tether", "300MiB"},
	} {
		got, n := goMemLimit(tc.set, tc.deployment, tc.container)
		if got != tc.want || (tc.want != nil && n != 1) {
			t.Errorf("%s %v: GOMEMLIMIT %v (%d entries), want %v once", tc.deployment, tc.set, got, n, tc.want)
		}
	}
	objs, out := render(t, helm, "--set", "server.resources.limits.memory=lots")
	if objs != nil || !strings.Contains(out, `memory limit "lots"`) {
		t.Errorf("a memory limit GOMEMLIMIT cannot be sized from: want a refusal naming it, got:\n%.400s", out)
	}
}

// Every container and init container says what it needs.
func TestHelmChartResources(t *testing.T) {
	helm := findHelm(t)
	objs, out := render(t, helm, chartValues("agent-values.yaml"), "--set", "sealingKey.existingSecret=key")
	if objs == nil {
		t.Fatalf("helm template failed:\n%s", out)
	}
	for _, d := range []manifest{objs["Deployment/t-tether"], objs["Deployment/t-tether-agent"]} {
		for _, list := range []string{"initContainers", "containers"} {
			cs, _ := d.get("spec", "template", "spec", list).([]any)
			for _, c := range cs {
				m := manifest(c.(map[string]any))
				if m.get("resources", "requests", "memory") == nil {
					t.Errorf("%s: %s %v requests no memory", d.name(), list, m["name"])
				}
			}
		}
	}
	for _, name := range []string{"restore-state", "register"} {
		if container(t, objs["Deployment/t-tether-agent"], "initContainers", name).get("resources", "limits", "memory") == nil {
			t.Errorf("init container %s has no memory limit", name)
		}
	}
}

// The ServiceMonitor checks tether's certificate like any client: against a
// CA, for a name; never insecureSkipVerify.
func TestHelmChartServiceMonitorTLS(t *testing.T) {
	helm := findHelm(t)
	https := []string{chartValues("postgres-values.yaml"), "--set", "server.diagnostics.enabled=false",
		"--set", "metrics.serviceMonitor.authorization.secretName=tether-metrics-token"}
	for _, tc := range []struct {
		set        []string
		serverName string
		ca         string
	}{
		{nil, "t-tether.default.svc", "secret tether-tls ca.crt"},
		{[]string{"--set", "metrics.serviceMonitor.tlsConfig.serverName=tether.example.com",
			"--set", "metrics.serviceMonitor.tlsConfig.ca.configMap.name=corp-ca",
			"--set", "metrics.serviceMonitor.tlsConfig.ca.configMap.key=bundle.pem"}, "tether.example.com", "configMap corp-ca bundle.pem"},
	} {
		objs, out := render(t, helm, append(https, tc.set...)...)
		if objs == nil {
			t.Fatalf("helm template %v failed:\n%s", tc.set, out)
		}
		if strings.Contains(out, "insecureSkipVerify") {
			t.Errorf("%v: the chart skips certificate checks:\n%s", tc.set, out)
		}
		ep := objs["ServiceMonitor/t-tether"].get("spec", "endpoints", 0)
		e := manifest(ep.(map[string]any))
		if e.get("scheme") != "https" || e.get("tlsConfig", "serverName") != tc.serverName {
			t.Errorf("%v: endpoint %v, want https for %s", tc.set, ep, tc.serverName)
		}
		ca, _ := e.get("tlsConfig", "ca").(map[string]any)
		got := ""
		for kind, ref := range ca {
			r := ref.(map[string]any)
			got += kind + " " + r["name"].(string) + " " + r["key"].(string)
		}
		if got != tc.ca {
			t.Errorf("%v: CA from %q, want %q", tc.set, got, tc.ca)
		}
	}
	// ca takes a Secret or a ConfigMap, not both.
	objs, out := render(t, helm, append(https, "--set", "metrics.serviceMonitor.tlsConfig.ca.configMap.name=a",
		"--set", "metrics.serviceMonitor.tlsConfig.ca.configMap.key=k",
		"--set", "metrics.serviceMonitor.tlsConfig.ca.secret.name=b", "--set", "metrics.serviceMonitor.tlsConfig.ca.secret.key=k")...)
	if objs != nil {
		t.Errorf("a CA from both a Secret and a ConfigMap is accepted:\n%.400s", out)
	}
}

// The agent port's /metrics takes an admin token (its series name every
// organization's clusters): the ServiceMonitor scrapes the diagnostics
// port, on by default and behind a ClusterIP Service of its own whatever
// service.type, or sends a token from a Secret; never the agent port bare.
func TestHelmChartServiceMonitorAuthorization(t *testing.T) {
	helm := findHelm(t)
	objs, out := render(t, helm, "--set", "metrics.serviceMonitor.enabled=true", "--set", "service.type=LoadBalancer")
	if objs == nil {
		t.Fatalf("helm template with a ServiceMonitor and the defaults failed:\n%s", out)
	}
	if args := strings.Join(toStrings(container(t, objs["Deployment/t-tether"], "containers", "tether")["args"]), " "); !strings.Contains(args, "--diag-listen=0.0.0.0:9090") {
		t.Errorf("serve args %q: the diagnostics listener is not on by default", args)
	}
	diag := objs["Service/t-tether-diag"]
	if diag == nil || diag.get("spec", "type") != "ClusterIP" || diag.get("spec", "ports", 0, "name") != "diag" ||
		diag.get("metadata", "labels", "app.kubernetes.io/component") != "diagnostics" {
		t.Errorf("diagnostics Service %v, want ClusterIP with the diag port, labelled component=diagnostics", diag)
	}
	for _, p := range objs["Service/t-tether"].get("spec", "ports").([]any) {
		if p.(map[string]any)["name"] != "http" {
			t.Errorf("the agents' Service (a LoadBalancer here) exposes %v", p)
		}
	}
	sm := objs["ServiceMonitor/t-tether"]
	if sm.get("spec", "selector", "matchLabels", "app.kubernetes.io/component") != "diagnostics" ||
		sm.get("spec", "endpoints", 0, "port") != "diag" || sm.get("spec", "endpoints", 0, "authorization") != nil {
		t.Errorf("ServiceMonitor spec %v, want the diag port of the diagnostics Service, without a token", sm.get("spec"))
	}

	// Without diagnostics the agent port needs a token: refused without one,
	// saying what to set.
	off := []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "server.diagnostics.enabled=false"}
	objs, out = render(t, helm, off...)
	if objs != nil || !strings.Contains(out, "metrics.serviceMonitor.authorization.secretName") || !strings.Contains(out, "tether admin-token create") ||
		!strings.Contains(out, "server.diagnostics") {
		t.Errorf("a ServiceMonitor on the agent port without a token: want a refusal naming the value and the command, got:\n%.600s", out)
	}
	objs, out = render(t, helm, append(off, "--set", "metrics.serviceMonitor.authorization.secretName=tether-metrics-token")...)
	if objs == nil {
		t.Fatalf("helm template with the token's Secret failed:\n%s", out)
	}
	if objs["Service/t-tether-diag"] != nil {
		t.Error("a diagnostics Service though server.diagnostics.enabled=false")
	}
	sm = objs["ServiceMonitor/t-tether"]
	ep := manifest(sm.get("spec", "endpoints", 0).(map[string]any))
	if sm.get("spec", "selector", "matchLabels", "app.kubernetes.io/component") != "server" || ep.get("port") != "http" ||
		ep.get("authorization", "type") != "Bearer" || ep.get("authorization", "credentials", "name") != "tether-metrics-token" ||
		ep.get("authorization", "credentials", "key") != "token" {
		t.Errorf("ServiceMonitor spec %v, want the http port with the bearer token of Secret tether-metrics-token, key token", sm.get("spec"))
	}
	// Off without a ServiceMonitor is a choice, not an error.
	if objs, out := render(t, helm, "--set", "server.diagnostics.enabled=false"); objs == nil {
		t.Errorf("server.diagnostics.enabled=false without a ServiceMonitor is refused:\n%s", out)
	}
	if out, err := run(t, 2*time.Minute, helm, "lint", "--strict", filepath.Join("helm", "tether"), "--set", "metrics.serviceMonitor.authorization.scret=x"); err == nil {
		t.Errorf("helm lint --strict passes a misspelt authorization value:\n%s", out)
	}
}

// The chart carries the project's license, word for word.
func TestHelmChartLicense(t *testing.T) {
	top, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := os.ReadFile(filepath.Join("helm", "tether", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(top, chart) {
		t.Error("helm/tether/LICENSE differs from the repository's LICENSE: copy it again")
	}
	if !bytes.Contains(top, []byte("Apache License\n                           Version 2.0, January 2004")) || !bytes.Contains(top, []byte("Copyright 2026 The tether authors")) {
		t.Error("LICENSE is not the Apache License 2.0 of the tether authors")
	}
}
