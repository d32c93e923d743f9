// Package deploy holds the packaging around tether (Dockerfile at the
// repository's root, the Helm chart, the systemd unit, alert rules and a
// dashboard) and the tests that check them with the real tools, where those
// tools are on the machine, and skip with a message where they are not.
package deploy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// helmVersion is the Helm the Makefile's tools target installs.
const helmVersion = "v3.22.0"

// root is the repository's root, from this package's directory.
const root = ".."

// findHelm returns the helm binary: on PATH, in GOPATH/bin (where `go
// install helm.sh/helm/v3/cmd/helm@VERSION` puts it), or in the
// repository's bin/tools (make tools). It skips the test otherwise.
func findHelm(t *testing.T) string {
	t.Helper()
	if p := findTool("helm"); p != "" {
		return p
	}
	t.Skipf("helm is not installed, so the chart is not checked: run `make tools` (go install helm.sh/helm/v3/cmd/helm@%s)", helmVersion)
	return ""
}

// findTool looks for a Go-installed tool on PATH, in the repository's
// bin/tools and in GOPATH/bin; "" when it is nowhere.
func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	candidates := []string{filepath.Join(root, "bin", "tools", name)}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(dir, "bin", name))
		}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			// Absolute: some tests run it from another directory.
			if abs, err := filepath.Abs(c); err == nil {
				return abs
			}
			return c
		}
	}
	return ""
}

func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// manifest is one rendered Kubernetes object, decoded loosely.
type manifest map[string]any

func (m manifest) kind() string { s, _ := m["kind"].(string); return s }

func (m manifest) name() string {
	md, _ := m["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// get walks a path of map keys and list indexes.
func (m manifest) get(path ...any) any {
	var cur any = map[string]any(m)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func render(t *testing.T, helm string, set ...string) (map[string]manifest, string) {
	t.Helper()
	args := append([]string{"template", "t", filepath.Join("helm", "tether")}, set...)
	out, err := run(t, 2*time.Minute, helm, args...)
	if err != nil {
		return nil, out
	}
	objs := map[string]manifest{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var m map[string]any // not manifest: yaml would make nested maps manifests too
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template printed YAML that does not parse: %v\n%s", err, out)
		}
		if m == nil {
			continue
		}
		objs[manifest(m).kind()+"/"+manifest(m).name()] = m
	}
	return objs, out
}

// container returns the container (or init container) called name of a
// Deployment.
func container(t *testing.T, d manifest, list, name string) manifest {
	t.Helper()
	cs, _ := d.get("spec", "template", "spec", list).([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	t.Fatalf("%s has no %s %q", d.name(), list, name)
	return nil
}

func envOf(c manifest) map[string]any {
	out := map[string]any{}
	env, _ := c["env"].([]any)
	for _, e := range env {
		m := e.(map[string]any)
		if v, ok := m["value"]; ok {
			out[m["name"].(string)] = v
		} else {
			out[m["name"].(string)] = m["valueFrom"]
		}
	}
	return out
}

func TestHelmChart(t *testing.T) {
	helm := findHelm(t)
	sets := []string{"", "ci/sqlite-values.yaml", "ci/postgres-values.yaml", "ci/agent-values.yaml", "ci/agent-only-values.yaml"}
	for _, values := range sets {
		args := []string{"lint", "--strict", filepath.Join("helm", "tether")}
		if values != "" {
			args = append(args, "-f", filepath.Join("helm", "tether", values))
		}
		if out, err := run(t, 2*time.Minute, helm, args...); err != nil {
			t.Errorf("helm lint with %q: %v\n%s", values, err, out)
		}
	}
	values := func(f string) string { return "--values=" + filepath.Join("helm", "tether", "ci", f) }

	t.Run("sqlite", func(t *testing.T) {
		objs, out := render(t, helm, values("sqlite-values.yaml"))
		if objs == nil {
			t.Fatalf("helm template failed:\n%s", out)
		}
		d := objs["Deployment/t-tether"]
		if d == nil {
			t.Fatalf("no server Deployment:\n%s", out)
		}
		if r := d.get("spec", "replicas"); r != 1 {
			t.Errorf("replicas %v, want 1 on SQLite", r)
		}
		if s := d.get("spec", "strategy", "type"); s != "Recreate" {
			t.Errorf("strategy %v, want Recreate (one writer on the volume)", s)
		}
		if objs["PersistentVolumeClaim/t-tether-data"] == nil {
			t.Error("no PersistentVolumeClaim for the database")
		}
		if objs["ServiceMonitor/t-tether"] == nil {
			t.Error("no ServiceMonitor though metrics.serviceMonitor.enabled")
		}
		if objs["Service/t-tether"] == nil {
			t.Error("no Service")
		}
		c := container(t, d, "containers", "tether")
		if p := manifest(c).get("livenessProbe", "httpGet", "path"); p != "/healthz" {
			t.Errorf("liveness probe %v, want /healthz", p)
		}
		if p := manifest(c).get("readinessProbe", "httpGet", "path"); p != "/readyz" {
			t.Errorf("readiness probe %v, want /readyz", p)
		}
		if env := envOf(c); env["TETHER_DB"] != "/var/lib/tether/tether.db" || env["TETHER_SHUTDOWN_DELAY"] == nil {
			t.Errorf("env %v, want the database on the volume and a shutdown delay", env)
		}
		if limit := envOf(c)["GOMEMLIMIT"]; limit != "460MiB" {
			t.Errorf("GOMEMLIMIT %v, want 460MiB: 90%% of the container's 512Mi", limit)
		}
		// Without a memory limit there is nothing to follow.
		unlimited, out := render(t, helm, values("sqlite-values.yaml"), "--set", "server.resources.limits=null")
		if unlimited == nil {
			t.Fatalf("helm template without a memory limit failed:\n%s", out)
		}
		if v, ok := envOf(container(t, unlimited["Deployment/t-tether"], "containers", "tether"))["GOMEMLIMIT"]; ok {
			t.Errorf("GOMEMLIMIT %v without a memory limit", v)
		}
		if d.get("spec", "template", "spec", "enableServiceLinks") != false {
			t.Error("service links are on: Kubernetes would set TETHER_PORT and the like, which tether reads as flags")
		}
		if ro := manifest(c).get("securityContext", "readOnlyRootFilesystem"); ro != true {
			t.Error("the root filesystem is writable")
		}
	})

	t.Run("postgres", func(t *testing.T) {
		objs, out := render(t, helm, values("postgres-values.yaml"))
		if objs == nil {
			t.Fatalf("helm template failed:\n%s", out)
		}
		d := objs["Deployment/t-tether"]
		if r := d.get("spec", "replicas"); r != 3 {
			t.Errorf("replicas %v, want 3", r)
		}
		if objs["PersistentVolumeClaim/t-tether-data"] != nil {
			t.Error("a PersistentVolumeClaim on PostgreSQL")
		}
		env := envOf(container(t, d, "containers", "tether"))
		if ref := manifest(map[string]any{"v": env["TETHER_DB"]}).get("v", "secretKeyRef", "name"); ref != "tether-postgres" {
			t.Errorf("TETHER_DB from %v, want the Secret tether-postgres", env["TETHER_DB"])
		}
		if env["TETHER_KEY_FILE"] != "/sealing-key/key" || env["TETHER_TRUSTED_PROXIES"] != "10.0.0.0/8" || env["TETHER_TLS_CERT"] == nil {
			t.Errorf("env %v, want the sealing key, trusted proxies and TLS", env)
		}
		if v := env["TETHER_WEBHOOK_ALLOW_CIDR"]; v != "10.20.0.0/16,192.168.7.12" {
			t.Errorf("TETHER_WEBHOOK_ALLOW_CIDR %v, want server.webhookAllowCIDRs comma-separated", v)
		}
		container(t, d, "initContainers", "sealing-key")
		if p := objs["ServiceMonitor/t-tether"].get("spec", "endpoints", 0, "port"); p != "diag" {
			t.Errorf("ServiceMonitor scrapes port %v, want diag", p)
		}
	})

	t.Run("agent", func(t *testing.T) {
		objs, out := render(t, helm, values("agent-values.yaml"))
		if objs == nil {
			t.Fatalf("helm template failed:\n%s", out)
		}
		d := objs["Deployment/t-tether-agent"]
		if d == nil {
			t.Fatalf("no agent Deployment:\n%s", out)
		}
		reg := container(t, d, "initContainers", "register")
		if !strings.Contains(strings.Join(toStrings(reg["args"]), " "), "--keep-existing") {
			t.Errorf("register args %v: a restart would spend the token again", reg["args"])
		}
		tok := manifest(map[string]any{"v": envOf(reg)["TETHER_REGISTRATION_TOKEN"]})
		if tok.get("v", "secretKeyRef", "name") != "tether-registration-token" {
			t.Errorf("the token comes from %v, want its Secret", tok)
		}
		container(t, d, "containers", "save-state")
		role := objs["Role/t-tether-agent-state"]
		if role == nil || role.get("rules", 0, "resourceNames", 0) != "t-tether-agent-state" {
			t.Errorf("the agent's Role is not limited to its state Secret: %v", role)
		}
		if objs["ServiceAccount/t-tether-agent"] == nil || objs["RoleBinding/t-tether-agent-state"] == nil {
			t.Error("no ServiceAccount or RoleBinding for the agent")
		}
	})

	t.Run("agent alone", func(t *testing.T) {
		objs, out := render(t, helm, values("agent-only-values.yaml"))
		if objs == nil {
			t.Fatalf("helm template failed:\n%s", out)
		}
		for k := range objs {
			if strings.HasPrefix(k, "Service/") || k == "Deployment/t-tether" || strings.HasPrefix(k, "PersistentVolumeClaim/") {
				t.Errorf("server.enabled=false still renders %s", k)
			}
		}
		reg := container(t, objs["Deployment/t-tether-agent"], "initContainers", "register")
		if !strings.Contains(strings.Join(toStrings(reg["args"]), " "), "--server=https://tether.example.com:7070") {
			t.Errorf("register args %v, want agent.server", reg["args"])
		}
	})

	// Combinations that cannot work are refused, saying why.
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "server.replicas=2"}, "needs database.type=postgres"},
		{[]string{"--set", "database.type=postgres"}, "database.postgres.existingSecret"},
		{[]string{"--set", "database.type=postgres", "--set", "database.postgres.existingSecret=pg"}, "sealingKey.existingSecret"},
		{[]string{"--set", "database.type=mysql"}, "must be one of 'sqlite', 'postgres'"}, // values.schema.json
		{[]string{"--set", "agent.enabled=true"}, "agent.exec"},
		{[]string{"-f", filepath.Join("helm", "tether", "ci", "agent-only-values.yaml"), "--set", "agent.server="}, "needs agent.server"},
	} {
		objs, out := render(t, helm, tc.set...)
		if objs != nil || !strings.Contains(out, tc.want) {
			t.Errorf("helm template %v: want a refusal saying %q, got:\n%.400s", tc.set, tc.want, out)
		}
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}

// The image builds from a clean checkout and reports the version it was
// given, where a Docker daemon answers.
func TestDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building the image")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed, so the image is not built")
	}
	if out, err := run(t, 30*time.Second, "docker", "info"); err != nil {
		t.Skipf("no Docker daemon answers, so the image is not built: %s", lastLine(out))
	}
	tag := "tether-test:" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	out, err := run(t, 20*time.Minute, "docker", "build", "--build-arg", "VERSION=v0.0.0-test", "--build-arg", "COMMIT=test", "-t", tag, root)
	if err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run(t, time.Minute, "docker", "rmi", "-f", tag) })
	out, err = run(t, time.Minute, "docker", "run", "--rm", tag, "version")
	if err != nil || !strings.Contains(out, "tether v0.0.0-test") || !strings.Contains(out, "commit: test") {
		t.Fatalf("docker run %s version: %v\n%s", tag, err, out)
	}
	out, err = run(t, time.Minute, "docker", "image", "inspect", "--format", "{{.Config.User}} {{json .Config.Volumes}} {{json .Config.ExposedPorts}}", tag)
	if err != nil || !strings.Contains(out, "65532") || !strings.Contains(out, "/var/lib/tether") || !strings.Contains(out, "7070/tcp") {
		t.Errorf("image config: %v %s; want a non-root user, the data volume and port 7070", err, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// .goreleaser.yaml builds what the issue promises: linux and darwin on amd64
// and arm64, checksums, SBOMs, and the version stamped.
func TestGoreleaserConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Env     []string `yaml:"env"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Checksum map[string]any   `yaml:"checksum"`
		Sboms    []map[string]any `yaml:"sboms"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(cfg.Builds))
	}
	bd := cfg.Builds[0]
	if strings.Join(bd.Goos, ",") != "linux,darwin" || strings.Join(bd.Goarch, ",") != "amd64,arm64" {
		t.Errorf("builds %v/%v, want linux,darwin / amd64,arm64", bd.Goos, bd.Goarch)
	}
	if !strings.Contains(strings.Join(bd.Env, " "), "CGO_ENABLED=0") {
		t.Error("the release binaries are not static")
	}
	ld := strings.Join(bd.Ldflags, " ")
	for _, v := range []string{"buildinfo.Version=", "buildinfo.Commit=", "buildinfo.Date="} {
		if !strings.Contains(ld, v) {
			t.Errorf("ldflags do not set %s", v)
		}
	}
	if cfg.Checksum == nil || len(cfg.Sboms) == 0 {
		t.Error("no checksums or no SBOMs")
	}
	gr := findTool("goreleaser")
	if gr == "" {
		t.Skip("goreleaser is not installed, so `goreleaser check` does not run (go install github.com/goreleaser/goreleaser/v2@v2.15.1)")
	}
	cmd := exec.Command(gr, "check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("goreleaser check: %v\n%s", err, out)
	}
}

// What the image promises, checked in the Dockerfile itself where no Docker
// daemon can build it: a static binary stamped with its version, on a
// distroless non-root base, its data on a volume, its ports exposed.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{
		"CGO_ENABLED=0",
		"internal/buildinfo.Version=${VERSION}",
		"internal/buildinfo.Commit=${COMMIT}",
		"internal/buildinfo.Date=${DATE}",
		`VOLUME ["/var/lib/tether"]`,
		"EXPOSE 7070",
		"USER 65532:65532",
		"ENV TETHER_DB=/var/lib/tether/tether.db",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static-debian12:nonroot@sha256:[0-9a-f]{64} AS server$`).MatchString(df) {
		t.Error("the server's base is not distroless static-debian12:nonroot, pinned by digest")
	}
	// The server is the default target: the last stage.
	stages := regexp.MustCompile(`(?m)^FROM .* AS (\w+)$`).FindAllStringSubmatch(df, -1)
	if len(stages) == 0 || stages[len(stages)-1][1] != "server" {
		t.Errorf("stages %v: the last (default) one must be the server", stages)
	}
}
