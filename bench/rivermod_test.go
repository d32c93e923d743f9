package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The peer's module (bench/river) builds tether through a replace of the
// repository root, so a change of tether's go.mod (its go version, a new
// dependency) leaves it untidy, and `make bench` then stops at the peer's
// scenario with "updates to go.mod needed". Its go.mod must stay tidy. The
// check needs River in the module cache (it never downloads anything): on a
// machine that never ran the peer benchmark it skips.
func TestRiverModuleIsTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go mod tidy of bench/river skipped")
	}
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = "river"
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return
	case strings.Contains(string(out), "module lookup disabled"), strings.Contains(string(out), "GOPROXY=off"):
		t.Skipf("River's modules are not in this machine's module cache (run `make bench ONLY=Peers` once to fetch them): %s", lineWith(out, "disabled"))
	case errors.As(err, &exit) && strings.Contains(string(out), "@@"):
		t.Fatalf("bench/river/go.mod is not tidy: run `cd bench/river && go mod tidy` and commit the result:\n%s", out)
	default:
		t.Fatalf("go mod tidy -diff in bench/river: %v\n%s", err, out)
	}
}

// lineWith returns the first line of b that contains word, or b's last line.
func lineWith(b []byte, word string) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if strings.Contains(l, word) {
			return l
		}
	}
	return lines[len(lines)-1]
}
