package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// exportedMetrics scrapes a real server and returns every tether_ series
// name it exposes (histograms with their _bucket, _sum and _count).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	db := filepath.Join(t.TempDir(), "tether.db")
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(registry.KeyFilePath(db))})
	defer reg.Close()
	s := server.New(reg, server.Config{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	// Scraped where the chart's ServiceMonitor scrapes by default: the
	// --diag-listen port, which needs no token.
	diag := httptest.NewServer(s.DiagHandler())
	defer diag.Close()
	// A refused registration: counters with labels appear once used.
	if resp, err := http.Post(srv.URL+"/api/agent/register", "application/vnd.vworkspace.agent.v1+json", strings.NewReader(`{"registrationToken":"nope"}`)); err == nil {
		resp.Body.Close()
	}
	resp, err := http.Get(diag.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if m := regexp.MustCompile(`^# TYPE (tether_\w+) (\w+)`).FindStringSubmatch(line); m != nil {
			names[m[1]] = true
			if m[2] == "histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
			}
		}
	}
	// Series that only appear with data (a cluster that sent a heartbeat):
	// the names the server's source declares.
	files, _ := filepath.Glob(filepath.Join("..", "server", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(tether_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
			// A histogram (named in seconds, by convention) that has seen
			// nothing yet is not scraped at all: its series too.
			if strings.HasSuffix(m[1], "_seconds") {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
			}
		}
	}
	return names
}

var metricName = regexp.MustCompile(`\btether_[a-z_]+\b`)

// The example alert rules and the dashboard only query series tether
// exports: a renamed metric must take them along.
func TestAlertsAndDashboardUseRealMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	if len(exported) < 10 {
		t.Fatalf("only %d tether_ series scraped: %v", len(exported), exported)
	}

	raw, err := os.ReadFile(filepath.Join("prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q lacks a name, an expression, a severity or a summary", r.Alert)
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if !exported[m] {
					t.Errorf("alert %s queries %s, which tether does not export", r.Alert, m)
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("%d alert rules, want the fleet's main failure modes covered", n)
	}

	raw, err = os.ReadFile(filepath.Join("grafana", "tether.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("tether.json: %v", err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, m := range metricName.FindAllString(q.Expr, -1) {
				if !exported[m] {
					t.Errorf("panel %q queries %s, which tether does not export", p.Title, m)
				}
			}
		}
	}
}

// promtoolVersion is the module version of the promtool the Makefile's
// tools target installs (Prometheus 3.16).
const promtoolVersion = "v0.316.0"

// Every alert rule has promtool tests (prometheus/alerts_test.yml), and
// they pass: each alert fires on its failure with its labels and text, and
// stays quiet where it should. The coverage check runs everywhere; the
// rules themselves where promtool is installed (make tools).
func TestAlertRulesPromtool(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(filepath.Join("prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	raw, err = os.ReadFile(filepath.Join("prometheus", "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatal(err)
	}
	// promtool compares the exact set of firing alerts, so a case where
	// one fires also checks that the series beside it do not.
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf("alerts_test.yml never sees %s fire", r.Alert)
			}
		}
	}

	promtool := findTool("promtool")
	if promtool == "" {
		t.Skipf("promtool is not installed, so the rules are not run: make tools (go install github.com/prometheus/prometheus/cmd/promtool@%s)", promtoolVersion)
	}
	if out, err := run(t, time.Minute, promtool, "check", "rules", filepath.Join("prometheus", "alerts.yaml")); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := run(t, 2*time.Minute, promtool, "test", "rules", filepath.Join("prometheus", "alerts_test.yml")); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
