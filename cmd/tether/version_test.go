package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/buildinfo"
)

// A release build stamps its version, commit and date with -ldflags, as the
// Makefile, the Dockerfile and GoReleaser do; `tether version`, `tether
// --version` and `tether version -o json` all report them.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "tether")
	const bi = "github.com/tetherhq/tether/internal/buildinfo"
	ldflags := "-X " + bi + ".Version=v9.8.7 -X " + bi + ".Commit=0123abcd -X " + bi + ".Date=2026-11-24T23:00:00Z"
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			t.Fatalf("tether %s: %v", strings.Join(args, " "), err)
		}
		for _, want := range []string{"tether v9.8.7", "commit: 0123abcd", "built:  2026-11-24T23:00:00Z", "go:     go1."} {
			if !strings.Contains(string(out), want) {
				t.Errorf("tether %s: got %q, want %q in it", strings.Join(args, " "), out, want)
			}
		}
	}
	out, err := exec.CommandContext(ctx, bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("tether version -o json: %v", err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("tether version -o json: %v\n%s", err, out)
	}
	if got.Version != "v9.8.7" || got.Commit != "0123abcd" || got.Date != "2026-11-24T23:00:00Z" || got.GoVersion == "" || got.Platform == "" {
		t.Errorf("got %+v, want v9.8.7, 0123abcd, 2026-11-24T23:00:00Z and the toolchain", got)
	}
}

// An unstamped build says so instead of printing empty fields.
func TestVersionUnstamped(t *testing.T) {
	t.Parallel()
	res := ok(t, newDB(t), "version")
	if !strings.HasPrefix(res.stdout, "tether ") || strings.Contains(res.stdout, ":  \n") {
		t.Errorf("got %q, want a version line and filled fields", res.stdout)
	}
}
