package deploy

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// goreleaserConfig is the part of .goreleaser.yaml the tests check.
type goreleaserConfig struct {
	Archives []struct {
		Files []string `yaml:"files"`
	} `yaml:"archives"`
	Nfpms []struct {
		Formats  []string `yaml:"formats"`
		License  string   `yaml:"license"`
		Bindir   string   `yaml:"bindir"`
		Contents []struct {
			Src  string `yaml:"src"`
			Dst  string `yaml:"dst"`
			Type string `yaml:"type"`
		} `yaml:"contents"`
		Scripts map[string]string `yaml:"scripts"`
	} `yaml:"nfpms"`
	DockersV2 []struct {
		Dockerfile string            `yaml:"dockerfile"`
		Images     []string          `yaml:"images"`
		Tags       []string          `yaml:"tags"`
		Platforms  []string          `yaml:"platforms"`
		Flags      []string          `yaml:"flags"`
		Labels     map[string]string `yaml:"labels"`
	} `yaml:"dockers_v2"`
	Signs []struct {
		Cmd       string   `yaml:"cmd"`
		Artifacts string   `yaml:"artifacts"`
		Args      []string `yaml:"args"`
	} `yaml:"signs"`
	DockerSigns []struct {
		Cmd       string   `yaml:"cmd"`
		Artifacts string   `yaml:"artifacts"`
		Args      []string `yaml:"args"`
	} `yaml:"docker_signs"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	var cfg goreleaserConfig
	if err := yaml.Unmarshal(readUnit(t, root, ".goreleaser.yaml"), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The release pushes the images the chart runs by default: the same
// repositories, tagged with the release's version (goreleaser's .Version,
// without the v), which is what the chart's appVersion must be for the
// tag; for amd64 and arm64, labelled, from the stage of the release
// Dockerfile that matches.
func TestReleaseImagesAreTheChartsImages(t *testing.T) {
	var values struct {
		Image struct {
			Repository string `yaml:"repository"`
			Tag        string `yaml:"tag"`
		} `yaml:"image"`
		Agent struct {
			Image struct {
				Repository string `yaml:"repository"`
				Tag        string `yaml:"tag"`
			} `yaml:"image"`
		} `yaml:"agent"`
	}
	if err := yaml.Unmarshal(readUnit(t, "helm", "tether", "values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(readUnit(t, "helm", "tether", "Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if values.Image.Tag != "" || values.Agent.Image.Tag != "" {
		t.Errorf("the chart's image tags are %q and %q: empty, they follow appVersion and so the release", values.Image.Tag, values.Agent.Image.Tag)
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(chart.AppVersion) {
		t.Errorf("appVersion %q is not a version as goreleaser's .Version spells it (X.Y.Z, no v)", chart.AppVersion)
	}
	release := string(readUnit(t, root, ".github", "workflows", "release.yml"))
	if !strings.Contains(release, "appVersion") {
		t.Error("the release workflow does not check that the chart's appVersion is the tag's version")
	}

	cfg := readGoreleaser(t)
	dockerfiles := map[string]string{}
	targets := map[string]string{}
	for _, d := range cfg.DockersV2 {
		if len(d.Images) != 1 {
			t.Fatalf("dockers_v2 entry with images %v: want one repository each", d.Images)
		}
		img := d.Images[0]
		if !slices.Contains(d.Tags, "{{ .Version }}") {
			t.Errorf("%s: tags %v lack {{ .Version }}, the chart's default tag", img, d.Tags)
		}
		if strings.Join(d.Platforms, ",") != "linux/amd64,linux/arm64" {
			t.Errorf("%s: platforms %v, want linux/amd64,linux/arm64", img, d.Platforms)
		}
		for _, l := range []string{"source", "version", "revision", "created", "licenses", "title", "description"} {
			if d.Labels["org.opencontainers.image."+l] == "" {
				t.Errorf("%s: no org.opencontainers.image.%s label", img, l)
			}
		}
		if d.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
			t.Errorf("%s: licenses label %q", img, d.Labels["org.opencontainers.image.licenses"])
		}
		for _, f := range d.Flags {
			if t, ok := strings.CutPrefix(f, "--target="); ok {
				targets[img] = t
			}
		}
		dockerfiles[img] = d.Dockerfile
	}
	for img, target := range map[string]string{values.Image.Repository: "server", values.Agent.Image.Repository: "agent"} {
		if targets[img] != target {
			t.Errorf("the chart runs %s, which the release builds from target %q, want %q (built: %v)", img, targets[img], target, targets)
			continue
		}
		df := string(readUnit(t, root, dockerfiles[img]))
		if !regexp.MustCompile(`(?m)^FROM \S+ AS ` + target + `$`).MatchString(df) {
			t.Errorf("%s has no stage %s", dockerfiles[img], target)
		}
		if !strings.Contains(df, "COPY $TARGETPLATFORM/tether /usr/local/bin/tether") {
			t.Errorf("%s does not copy goreleaser's binary from $TARGETPLATFORM/tether", dockerfiles[img])
		}
	}
}

// Both Dockerfiles pin every base by digest, and the same ones: the images
// built from source are the release's.
func TestDockerfilesPinTheirBases(t *testing.T) {
	from := regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`)
	pinned := regexp.MustCompile(`^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$`)
	bases := map[string][]string{}
	for _, f := range []string{filepath.Join(root, "Dockerfile"), filepath.Join("docker", "release.Dockerfile")} {
		for _, m := range from.FindAllStringSubmatch(string(readUnit(t, f)), -1) {
			if !pinned.MatchString(m[1]) {
				t.Errorf("%s: FROM %s is not pinned by digest (name:tag@sha256:...)", f, m[1])
			}
			if !strings.HasPrefix(m[1], "golang:") {
				bases[f] = append(bases[f], m[1])
			}
		}
	}
	for _, b := range bases[filepath.Join(root, "Dockerfile")] {
		if !slices.Contains(bases[filepath.Join("docker", "release.Dockerfile")], b) {
			t.Errorf("the Dockerfile's base %s is not the release's (%v)", b, bases)
		}
	}
	if df := string(readUnit(t, root, "Dockerfile")); !strings.Contains(df, "BuildKit") {
		t.Error("the Dockerfile does not say that it needs BuildKit")
	}
}

// deb and rpm packages carry the units, their drop-ins, the settings files
// (kept across upgrades) and the scripts that create the users; the
// checksums and images are signed with cosign; the archives carry the
// license.
func TestReleasePackagesAndSignatures(t *testing.T) {
	cfg := readGoreleaser(t)
	if len(cfg.Archives) == 0 || !slices.Contains(cfg.Archives[0].Files, "LICENSE") {
		t.Error("the archives do not carry LICENSE")
	}
	if len(cfg.Nfpms) != 1 {
		t.Fatalf("%d nfpms, want 1", len(cfg.Nfpms))
	}
	p := cfg.Nfpms[0]
	if strings.Join(p.Formats, ",") != "deb,rpm" || p.License != "Apache-2.0" || p.Bindir != "/usr/bin" {
		t.Errorf("nfpms: formats %v, license %q, bindir %q", p.Formats, p.License, p.Bindir)
	}
	want := map[string]string{
		"/usr/lib/systemd/system/tether.service":                      "deploy/systemd/tether.service",
		"/usr/lib/systemd/system/tether-agent.service":                "deploy/systemd/tether-agent.service",
		"/usr/lib/systemd/system/tether.service.d/package.conf":       "deploy/packaging/tether.service.d/package.conf",
		"/usr/lib/systemd/system/tether-agent.service.d/package.conf": "deploy/packaging/tether-agent.service.d/package.conf",
		"/etc/tether/tether.env":                                      "deploy/systemd/tether.env",
		"/etc/tether/tether-agent.env":                                "deploy/systemd/tether-agent.env",
	}
	for _, c := range p.Contents {
		if src, ok := want[c.Dst]; ok {
			if c.Src != src {
				t.Errorf("%s from %s, want %s", c.Dst, c.Src, src)
			}
			if strings.HasPrefix(c.Dst, "/etc/") && c.Type != "config|noreplace" {
				t.Errorf("%s is of type %q: an upgrade would overwrite the admin's settings", c.Dst, c.Type)
			}
			delete(want, c.Dst)
		}
		if c.Src != "" {
			if _, err := os.Stat(filepath.Join(root, c.Src)); err != nil && !strings.Contains(c.Src, "*") {
				t.Errorf("the package's %s: %v", c.Dst, err)
			}
		}
	}
	for dst := range want {
		t.Errorf("the packages lack %s", dst)
	}
	for _, s := range []string{"preinstall", "postinstall", "preremove", "postremove"} {
		fi, err := os.Stat(filepath.Join(root, p.Scripts[s]))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("nfpms script %s (%q): %v, or not executable", s, p.Scripts[s], err)
		}
	}

	if len(cfg.Signs) != 1 || cfg.Signs[0].Cmd != "cosign" || cfg.Signs[0].Artifacts != "checksum" || !slices.Contains(cfg.Signs[0].Args, "sign-blob") {
		t.Errorf("signs %+v: want cosign sign-blob of the checksums", cfg.Signs)
	}
	if len(cfg.DockerSigns) != 1 || cfg.DockerSigns[0].Cmd != "cosign" || !slices.Contains(cfg.DockerSigns[0].Args, "${artifact}@${digest}") {
		t.Errorf("docker_signs %+v: want cosign sign of each image by digest", cfg.DockerSigns)
	}

	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
	}
	release := readUnit(t, root, ".github", "workflows", "release.yml")
	if err := yaml.Unmarshal(release, &wf); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wf.On.Push.Tags, []string{"v*"}) {
		t.Errorf("the release workflow runs on tags %v, want v*", wf.On.Push.Tags)
	}
	for perm, want := range map[string]string{"id-token": "write", "contents": "write", "packages": "write"} {
		if wf.Permissions[perm] != want {
			t.Errorf("the release workflow's %s permission is %q, want %s", perm, wf.Permissions[perm], want)
		}
	}
	for _, want := range []string{"sigstore/cosign-installer@", "goreleaser/goreleaser-action@", "args: release --clean"} {
		if !strings.Contains(string(release), want) {
			t.Errorf("the release workflow lacks %s", want)
		}
	}
	// Every action is pinned by commit.
	for _, m := range regexp.MustCompile(`uses: (\S+)`).FindAllStringSubmatch(string(release), -1) {
		if !regexp.MustCompile(`@[0-9a-f]{40}$`).MatchString(m[1]) {
			t.Errorf("the release workflow uses %s, not pinned by commit", m[1])
		}
	}
}

// The package's scripts, run for real with stand-ins for useradd, getent
// and systemctl: the users are created once, an install and an upgrade say
// what to do next and start or restart nothing, a removal stops the
// services and an upgrade's removal does not.
func TestPackageScripts(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the package's scripts with")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("tether-agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stubs := map[string]string{
		"useradd":   `echo "useradd $*" >>"$CALLS"; for a; do last=$a; done; echo "$last" >>"$USERS"`,
		"getent":    `grep -qx "$2" "$USERS"`,
		"systemctl": `echo "systemctl $*" >>"$CALLS"`,
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The scripts call systemctl where systemd runs: here, in a stand-in
	// for its runtime directory.
	if err := os.MkdirAll(filepath.Join(dir, "run", "systemd", "system"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(name string, args ...string) (string, string) {
		t.Helper()
		_ = os.Remove(log)
		text := strings.ReplaceAll(string(readUnit(t, "packaging", name)), "/run/systemd/system", filepath.Join(dir, "run", "systemd", "system"))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", append([]string{path}, args...)...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "CALLS=" + log, "USERS=" + users}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		calls, _ := os.ReadFile(log)
		return string(out), string(calls)
	}

	_, calls := script("preinstall.sh", "install")
	if !strings.Contains(calls, "useradd --system") || !strings.HasSuffix(strings.TrimSpace(calls), " tether") || strings.Count(calls, "useradd") != 1 {
		t.Errorf("preinstall with tether-agent present: %q, want one system user tether added", calls)
	}
	if _, calls = script("preinstall.sh", "upgrade", "0.1.0"); calls != "" {
		t.Errorf("preinstall with both users present: %q, want nothing", calls)
	}

	for _, tc := range []struct {
		args    []string
		says    string
		restart bool
	}{
		{[]string{"configure", ""}, "systemctl enable --now tether", false}, // deb, first install
		{[]string{"configure", "0.1.0"}, "back up first", false},            // deb, upgrade
		{[]string{"1"}, "systemctl enable --now tether", false},             // rpm, first install
		{[]string{"2"}, "back up first", false},                             // rpm, upgrade
	} {
		out, calls := script("postinstall.sh", tc.args...)
		if !strings.Contains(out, tc.says) {
			t.Errorf("postinstall %v says %q, want %q", tc.args, out, tc.says)
		}
		if strings.Contains(calls, "start") || strings.Contains(calls, "enable") {
			t.Errorf("postinstall %v starts something: %q", tc.args, calls)
		}
		if !strings.Contains(calls, "daemon-reload") {
			t.Errorf("postinstall %v: %q, want a daemon-reload", tc.args, calls)
		}
	}
	for _, tc := range []struct {
		args []string
		stop bool
	}{
		{[]string{"remove"}, true}, {[]string{"0"}, true}, // deb, rpm: removed
		{[]string{"upgrade", "0.2.0"}, false}, {[]string{"1"}, false}, // deb, rpm: upgraded
	} {
		_, calls := script("preremove.sh", tc.args...)
		stopped := strings.Contains(calls, "disable --now tether.service tether-agent.service")
		if stopped != tc.stop {
			t.Errorf("preremove %v: %q, want the services stopped: %v", tc.args, calls, tc.stop)
		}
	}
	if _, calls := script("postremove.sh", "remove"); !strings.Contains(calls, "daemon-reload") {
		t.Errorf("postremove: %q, want a daemon-reload", calls)
	}
	if _, err := exec.LookPath("shellcheck"); err == nil {
		files, _ := filepath.Glob(filepath.Join("packaging", "*.sh"))
		if out, err := run(t, time.Minute, "shellcheck", files...); err != nil {
			t.Errorf("shellcheck: %v\n%s", err, out)
		}
	}
}

// TestShippedDocsLinksResolve: the README and the docs that the release
// archives and the deb and rpm packages carry link only to what they carry
// too: a reader of /usr/share/doc/tether/README.md, or of an unpacked
// archive, can follow every relative link (the deployment guide, the
// payloads' schemas, the OpenAPI document).
func TestShippedDocsLinksResolve(t *testing.T) {
	cfg := readGoreleaser(t)
	if len(cfg.Archives) == 0 || len(cfg.Nfpms) != 1 {
		t.Fatalf("%d archives and %d nfpms, want some and 1", len(cfg.Archives), len(cfg.Nfpms))
	}
	glob := func(pattern string) []string {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(matches) == 0 {
			t.Errorf("%s matches nothing (%v)", pattern, err)
		}
		return matches
	}
	// Each layout maps a shipped path (slash-separated, relative to where
	// the docs are unpacked) to the repository file it comes from.
	archive := map[string]string{}
	for _, pattern := range cfg.Archives[0].Files {
		for _, m := range glob(pattern) {
			rel, _ := filepath.Rel(root, m)
			archive[filepath.ToSlash(rel)] = m
		}
	}
	const docDir = "/usr/share/doc/tether/"
	pkg := map[string]string{}
	for _, c := range cfg.Nfpms[0].Contents {
		if c.Src == "" || !strings.HasPrefix(c.Dst, docDir) {
			continue
		}
		dst := strings.TrimPrefix(c.Dst, docDir)
		if !strings.Contains(c.Src, "*") {
			pkg[dst] = filepath.Join(root, c.Src)
			continue
		}
		for _, m := range glob(c.Src) {
			pkg[dst+"/"+filepath.Base(m)] = m
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for name, layout := range map[string]map[string]string{"the archives": archive, "the packages": pkg} {
		if _, ok := layout["README.md"]; !ok {
			t.Errorf("%s carry no README.md", name)
		}
		shipped := func(p string) bool {
			if _, ok := layout[p]; ok {
				return true
			}
			for q := range layout {
				if strings.HasPrefix(q, strings.TrimSuffix(p, "/")+"/") {
					return true // a directory holding shipped files
				}
			}
			return false
		}
		for doc, src := range layout {
			if !strings.HasSuffix(doc, ".md") {
				continue
			}
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range link.FindAllStringSubmatch(string(b), -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				p := path.Clean(path.Join(path.Dir(doc), target))
				if name == "the packages" && p == "LICENSE" {
					continue // where each distribution's policy puts it: copyright, /usr/share/licenses
				}
				if !shipped(p) {
					t.Errorf("%s: %s links to %s, which %s do not carry", name, doc, m[1], name)
				}
			}
		}
	}
}
