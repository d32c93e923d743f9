package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command's --help shows an example (its own, or examples.go's).
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRoot(&globals{})
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
			return // cobra's own, whose help says how to use them
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no example in its --help: set Example, or add it to examples.go", c.CommandPath())
		} else if !strings.Contains(c.Example, "tether ") {
			t.Errorf("%s: example %q does not show a tether command line", c.CommandPath(), c.Example)
		}
	}
	walk(root)
}

// Completion scripts for the four shells, listed in --help, and values from
// the database: cluster names, job ids, states, views, formats.
func TestShellCompletion(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	if res := ok(t, db, "--help"); !strings.Contains(res.stdout, "completion") {
		t.Errorf("tether --help does not list completion:\n%s", res.stdout)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if res := ok(t, db, "completion", shell); len(res.stdout) < 500 {
			t.Errorf("completion %s: a %d-byte script", shell, len(res.stdout))
		}
	}
	createCluster(t, db, "alpha", "--namespaces", "apps")
	createCluster(t, db, "beta", "--namespaces", "apps")
	j := submit(t, db, "alpha", "apply", configMap("apps", "x"))
	ok(t, db, "admin-token", "create", "--name", "ci-bot", "--role", "viewer")
	complete := func(args ...string) []string {
		t.Helper()
		res := ok(t, db, append([]string{"__complete"}, args...)...)
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				out = append(out, line)
			}
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "get", ""}, "alpha beta"},
		{[]string{"cluster", "get", "b"}, "beta"},
		{[]string{"cluster", "get", "alpha", ""}, ""},
		{[]string{"job", "submit", "--cluster", ""}, "alpha beta"},
		{[]string{"job", "get", ""}, j.ID},
		{[]string{"job", "list", "--state", "c"}, "conflict canceled"},
		{[]string{"cluster", "list", "--state", ""}, "pending active disabled"},
		{[]string{"console", "--view", "j"}, "jobs"},
		{[]string{"cluster", "list", "-o", "y"}, "yaml"},
		{[]string{"job", "submit", "--kind", ""}, "apply delete intent"},
		{[]string{"admin-token", "revoke", ""}, "ci-bot"},
	} {
		if got := strings.Join(complete(tc.args...), " "); got != tc.want {
			t.Errorf("completing tether %s: got %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	// Completing against a database that does not exist offers nothing and
	// creates nothing.
	missing := filepath.Join(t.TempDir(), "missing.db")
	if res := ok(t, missing, "__complete", "cluster", "get", ""); strings.Contains(res.stdout, "alpha") {
		t.Errorf("completion against a missing database: %q", res.stdout)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("completion created the database")
	}
}
