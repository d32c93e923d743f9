package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// hardening is what both units promise (the agent's jobs run under it too).
var hardening = []string{"ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes",
	"CapabilityBoundingSet=", "SystemCallFilter=@system-service", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX"}

// The server's unit is valid and its exposure, by systemd's own measure,
// stays low; so with the package's drop-in.
func TestSystemdUnit(t *testing.T) {
	unit := readUnit(t, "systemd", "tether.service")
	for _, want := range append([]string{"DynamicUser=yes", "StateDirectory=tether", "ExecReload=/bin/kill -HUP $MAINPID"}, hardening...) {
		if !bytes.Contains(unit, []byte("\n"+want+"\n")) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	bin := buildTether(t)
	analyzeUnit(t, bin, "tether.service", "")
	analyzeUnit(t, bin, "tether.service", filepath.Join("packaging", "tether.service.d", "package.conf"))
}

// The agent's unit on a VM: hardened like the server's, registering on its
// first start only, and stopping the agent alone so that it drains its jobs
// (KillMode=mixed) within a stop timeout longer than drain plus kill grace.
func TestSystemdAgentUnit(t *testing.T) {
	unit := readUnit(t, "systemd", "tether-agent.service")
	for _, want := range append([]string{
		"DynamicUser=yes", "StateDirectory=tether-agent", "Environment=TETHER_STATE_DIR=/var/lib/tether-agent",
		"EnvironmentFile=/etc/tether/tether-agent.env",
		"ExecStartPre=/usr/local/bin/tether agent register --keep-existing",
		"ExecStart=/usr/local/bin/tether agent run --log-format json",
		"KillMode=mixed", "TimeoutStopSec=60", "RestartPreventExitStatus=2",
	}, hardening...) {
		if !bytes.Contains(unit, []byte("\n"+want+"\n")) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	// The agent's default drain and kill grace fit in TimeoutStopSec, with
	// 10 s to spare for the agent to exit.
	if need := agent.DefaultDrainTimeout + agent.DefaultKillGrace + 10*time.Second; need > 60*time.Second {
		t.Errorf("TimeoutStopSec=60 is less than the default drain and kill grace need (%v)", need)
	}
	// The settings file the unit reads names what it needs.
	env := readUnit(t, "systemd", "tether-agent.env")
	for _, want := range []string{"TETHER_SERVER=", "TETHER_EXEC=", "TETHER_REGISTRATION_TOKEN="} {
		if !bytes.Contains(env, []byte("\n"+want+"\n")) {
			t.Errorf("tether-agent.env lacks an empty %s line", want)
		}
	}
	bin := buildTether(t)
	analyzeUnit(t, bin, "tether-agent.service", "")
	analyzeUnit(t, bin, "tether-agent.service", filepath.Join("packaging", "tether-agent.service.d", "package.conf"))
}

// The package's drop-ins run the same commands as the units, from the
// package's /usr/bin/tether, as the users preinstall.sh creates.
func TestPackageDropInsMatchUnits(t *testing.T) {
	for _, tc := range []struct{ unit, user string }{
		{"tether.service", "tether"},
		{"tether-agent.service", "tether-agent"},
	} {
		unit := string(readUnit(t, "systemd", tc.unit))
		dropIn := string(readUnit(t, "packaging", tc.unit+".d", "package.conf"))
		for _, key := range []string{"ExecStartPre=", "ExecStart="} {
			want := lines(unit, key)
			got := lines(dropIn, key)
			if len(want) == 0 {
				continue
			}
			// A drop-in resets a command list with an empty assignment.
			if len(got) != 2 || got[0] != key || strings.Replace(want[0], "/usr/local/bin/tether", "/usr/bin/tether", 1) != got[1] {
				t.Errorf("%s's drop-in: %v, want %q reset and then %s with /usr/bin/tether", tc.unit, got, key, want[0])
			}
		}
		for _, want := range []string{"DynamicUser=no", "User=" + tc.user, "Group=" + tc.user} {
			if len(lines(dropIn, want)) != 1 || lines(dropIn, want)[0] != want {
				t.Errorf("%s's drop-in lacks %s", tc.unit, want)
			}
		}
		script := string(readUnit(t, "packaging", "preinstall.sh"))
		if !strings.Contains(script, "add_user "+tc.user+" ") {
			t.Errorf("preinstall.sh creates no user %s", tc.user)
		}
	}
}

func readUnit(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lines returns the lines of text that start with prefix.
func lines(text, prefix string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// buildTether builds cmd/tether for systemd-analyze, which wants the
// binaries a unit names to exist; "" where systemd-analyze cannot run.
func buildTether(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("systemd-analyze runs on Linux only")
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed, so the unit is not verified")
	}
	bin := filepath.Join(t.TempDir(), "tether")
	if out, err := run(t, 5*time.Minute, "go", "build", "-o", bin, "../cmd/tether"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// analyzeUnit runs systemd-analyze verify and security on a unit of
// deploy/systemd (with a drop-in, when given one), its binary paths pointed
// at bin: valid, and 2.0 or less, what systemd calls OK.
func analyzeUnit(t *testing.T, bin, name, dropIn string) {
	t.Helper()
	dir := t.TempDir()
	retarget := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/tether"), []byte(bin))
		return bytes.ReplaceAll(b, []byte("/usr/bin/tether"), []byte(bin))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, retarget(readUnit(t, "systemd", name)), 0o644); err != nil {
		t.Fatal(err)
	}
	if dropIn != "" {
		// systemd-analyze reads drop-ins beside the unit file it is given.
		d := filepath.Join(dir, name+".d")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, filepath.Base(dropIn)), retarget(readUnit(t, dropIn)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	what := name
	if dropIn != "" {
		what += " with " + dropIn
	}
	if out, err := run(t, time.Minute, "systemd-analyze", "verify", "--man=no", path); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s", what, err, out)
	}
	out, err := run(t, time.Minute, "systemd-analyze", "security", "--offline=yes", "--threshold=20", path)
	if err != nil {
		t.Errorf("systemd-analyze security %s: exposure above 2.0: %v\n%s", what, err, out)
	}
	// The package's drop-ins swap the dynamic user for a static one.
	if dropIn != "" && !strings.Contains(out, "static non-root user") {
		t.Errorf("systemd-analyze security %s: the drop-in's user was not read:\n%s", what, out)
	}
}
