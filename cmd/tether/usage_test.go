package main

import (
	"strings"
	"testing"
)

// Mistakes in how a command is called exit 2, say what was wrong in one
// sentence, and change nothing.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "u", "--namespaces", "apps")
	j := submit(t, db, "u", "apply", configMap("apps", "x"))

	for _, tc := range []struct {
		name     string
		args     []string
		fragment string
	}{
		{"unknown flag", []string{"cluster", "list", "--bogus"}, "unknown flag: --bogus"},
		{"unknown command", []string{"cluster", "frobnicate"}, `unknown command "frobnicate"`},
		{"unknown top-level command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		// A slip gets what was probably meant, in the same sentence.
		{"flag one letter short", []string{"cluster", "create", "--name", "m", "--namespace", "apps"}, "unknown flag: --namespace (did you mean --namespaces?)"},
		{"misspelt flag", []string{"job", "list", "--sate", "queued"}, "unknown flag: --sate (did you mean --state?)"},
		{"misspelt subcommand", []string{"job", "submt"}, `unknown command "submt" for "tether job" (did you mean submit?)`},
		{"misspelt top-level command", []string{"clusters", "list"}, `unknown command "clusters" for "tether" (did you mean cluster?)`},
		{"bad output format", []string{"cluster", "list", "-o", "xml"}, `output format "xml"`},
		{"bad jsonpath", []string{"cluster", "list", "-o", "jsonpath={range [*]}{.id}"}, "{range} without {end}"},
		{"bad jq", []string{"cluster", "list", "--jq", ".[] |"}, "--jq"},
		{"jq with yaml", []string{"cluster", "list", "--jq", ".[]", "-o", "yaml"}, "leave out -o yaml"},
		{"missing --name", []string{"cluster", "create"}, "--name"},
		{"bad --mode", []string{"cluster", "create", "--name", "m", "--mode", "carrier-pigeon"}, `--mode "carrier-pigeon"`},
		{"bad --require-capability", []string{"cluster", "create", "--name", "m", "--require-capability", "telepathy"}, `"telepathy" is not one of hmac, lease`},
		{"bad --token-ttl", []string{"cluster", "create", "--name", "m", "--token-ttl", "tomorrow"}, `"tomorrow" is not a duration`},
		{"bad --lease-seconds", []string{"cluster", "create", "--name", "m", "--lease-seconds", "soon"}, `invalid argument "soon"`},
		{"missing argument", []string{"cluster", "get"}, "accepts 1 arg(s), received 0"},
		{"too many arguments", []string{"cluster", "get", "a", "b"}, "accepts 1 arg(s), received 2"},
		{"edit without a change", []string{"cluster", "edit", "u"}, "at least one change"},
		{"edit replacing and adding", []string{"cluster", "edit", "u", "--set-namespaces", "a", "--add-namespace", "b"}, "cannot be combined"},
		{"delete without --yes and without a terminal", []string{"cluster", "delete", "u"}, "pass --yes"},
		{"bad --ttl", []string{"token", "issue", "u", "--ttl", "soon"}, `"soon" is not a duration`},
		{"negative --ttl", []string{"token", "issue", "u", "--ttl", "-1h"}, "negative"},
		{"bad --ttl in days", []string{"token", "issue", "u", "--ttl", "1.5d"}, "whole number of days"},
		{"--ttl of more days than a duration holds", []string{"token", "issue", "u", "--ttl", "106752d"}, `"106752d" is longer than any duration`},
		{"--ttl of days that wrap to minutes", []string{"token", "issue", "u", "--ttl", "213504d"}, `"213504d" is longer than any duration`},
		{"--retain-jobs of too many days", []string{"serve", "--retain-jobs", "106752d"}, `"106752d" is longer than any duration`},
		{"missing --cluster", []string{"job", "submit", "--kind", "apply", "--payload", "{}"}, "--cluster"},
		{"missing --kind", []string{"job", "submit", "--cluster", "u", "--payload", "{}"}, "--kind"},
		{"bad --kind", []string{"job", "submit", "--cluster", "u", "--kind", "patch", "--payload", "{}"}, `--kind "patch" is not one of apply, delete, intent`},
		{"no payload", []string{"job", "submit", "--cluster", "u", "--kind", "apply"}, "exactly one of -f FILE"},
		{"two payloads", []string{"job", "submit", "--cluster", "u", "--kind", "apply", "--payload", "{}", "-f", "x.json"}, "exactly one of -f FILE"},
		{"--timeout without --wait", []string{"job", "submit", "--cluster", "u", "--kind", "apply", "--payload", "{}", "--timeout", "1m"}, "--timeout applies only with --wait"},
		{"bad --expires-in", []string{"job", "submit", "--cluster", "u", "--kind", "apply", "--payload", "{}", "--expires-in", "later"}, `"later" is not a duration`},
		{"bad --state", []string{"job", "list", "--state", "running"}, `--state "running" is not one of queued, in_progress`},
		{"bad --kind in list", []string{"job", "list", "--kind", "patch"}, `--kind "patch"`},
		{"bad --limit", []string{"job", "list", "--limit", "0"}, "--limit 0"},
		{"extend-lease without --by", []string{"job", "extend-lease", j.ID}, "--by"},
		{"bad events --limit", []string{"events", "--limit", "-5"}, "--limit -5"},
		{"audit with an argument", []string{"audit", "everything"}, `unknown command "everything"`},
		{"completion for an unknown shell", []string{"completion", "tcsh"}, `unknown command "tcsh" for "tether completion"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cli(t, db, tc.args...)
			wantError(t, res, exitUsage, tc.fragment)
			// cobra's suggestion block was a list of tab-indented lines,
			// which the terminal-safe printer showed as a literal \t.
			if strings.Contains(res.stderr, `\t`) || strings.Contains(res.stderr, "Did you mean this?") {
				t.Errorf("got %q, want the suggestion in the sentence", res.stderr)
			}
		})
	}

	// A plain error whose words look like cobra's (a name a user typed) is
	// not a usage error: exit 1.
	wantError(t, cli(t, db, "cluster", "get", "accepts all"), exitError, `no cluster has the id or name "accepts all"`)
	wantError(t, cli(t, db, "job", "get", "invalid argument"), exitError, `no job has the id "invalid argument"`)

	// Nothing changed: one cluster, one job, the cluster at version 1.
	if list := okJSON[[]clusterDetail](t, db, "cluster", "list"); len(list) != 1 || list[0].Version != 1 {
		t.Errorf("got %d clusters (first %+v), want only %s at version 1", len(list), list, c.ClusterID)
	}
	if jobs := okJSON[[]submittedJob](t, db, "job", "list"); len(jobs) != 1 {
		t.Errorf("got %d jobs, want 1", len(jobs))
	}
}

func TestHelpAndGroups(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, group := range []string{"cluster", "token", "credential", "job"} {
		res := ok(t, db, group)
		if !strings.Contains(res.stdout, "Available Commands") {
			t.Errorf("tether %s: got %q, want its help listing the subcommands", group, res.stdout)
		}
	}
	res := ok(t, db, "--help")
	for _, want := range []string{"cluster", "token", "credential", "job", "events", "audit", "version"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("got root help without %q\n%s", want, res.stdout)
		}
	}
}
