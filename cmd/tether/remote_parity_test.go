package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCLIRemoteMatchesLocal runs every admin command twice, the same way on
// two registries set up alike: once over a database (--db), once over a real
// tether serve's admin API (--server). What they print, table and JSON, on
// standard output and error, and their exit codes must be the same once ids,
// secrets, times and who acted are put aside.
func TestCLIRemoteMatchesLocal(t *testing.T) {
	localDB, remoteDB := newDB(t), newDB(t)
	var rootToken string
	for _, db := range []string{localDB, remoteDB} {
		rootToken = okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "admin").Token
		c := createCluster(t, db, "prod-eu", "--org", "acme", "--namespaces", "apps", "--catalog", "postgres", "--label", "env=prod")
		registerAgent(t, openRegistry(t, db), c.RegistrationToken, "hmac", "lease")
	}
	_, addr, _ := startServe(t, remoteDB)
	home := t.TempDir()
	tokenFile := filepath.Join(home, "token")
	if err := os.WriteFile(tokenFile, []byte(rootToken), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	local := &paritySide{name: "local", run: func(args ...string) result { return cli(t, localDB, args...) }}
	remote := &paritySide{name: "remote", run: func(args ...string) result {
		return cliWithEnv(t, "", env, append(args, "--server", "http://"+addr, "--token-file", tokenFile)...)
	}}
	local.vars, remote.vars = map[string]string{}, map[string]string{}

	// same runs one command line on both sides ({name} is the side's value
	// of name, captured from an earlier answer) and compares the results;
	// it returns both for captures.
	same := func(wantCode int, args ...string) (l, r result) {
		t.Helper()
		l, r = local.exec(args), remote.exec(args)
		if l.code != wantCode {
			t.Errorf("over --db, want exit %d:\n%s", wantCode, l)
		}
		if r.code != l.code {
			t.Errorf("tether %s exits %d over --server, %d over --db\nremote: %s\nlocal: %s", strings.Join(args, " "), r.code, l.code, r, l)
		}
		for _, out := range []struct{ what, l, r string }{{"stdout", l.stdout, r.stdout}, {"stderr", l.stderr, r.stderr}} {
			ln, rn := local.normalize(out.l), remote.normalize(out.r)
			if ln != rn {
				t.Errorf("tether %s prints a different %s over --server:\n%s", strings.Join(args, " "), out.what, lineDiff(ln, rn))
			}
		}
		return l, r
	}
	capture := func(name, field string, l, r result) {
		t.Helper()
		for _, s := range []struct {
			side *paritySide
			res  result
		}{{local, l}, {remote, r}} {
			var v map[string]any
			if err := json.Unmarshal([]byte(s.res.stdout), &v); err != nil || v[field] == nil {
				t.Fatalf("%s: no %s in the answer: %v\n%s", s.side.name, field, err, s.res)
			}
			s.side.vars[name] = fmt.Sprint(v[field])
		}
	}
	cm := func(ns, name string) string { return configMap(ns, name) }

	// Clusters.
	same(0, "cluster", "create", "--name", "staging", "--org", "acme", "--namespaces", "apps", "--label", "env=staging")
	same(0, "cluster", "create", "--name", "prod-us", "--namespaces", "apps", "--label", "env=prod", "-o", "json")
	same(1, "cluster", "create", "--name", "prod-eu")
	same(0, "cluster", "list")
	same(0, "cluster", "list", "-o", "json")
	same(0, "cluster", "list", "-l", "env=prod", "-o", "wide")
	same(0, "cluster", "get", "prod-eu")
	same(0, "cluster", "get", "prod-eu", "-o", "json")
	same(1, "cluster", "get", "nowhere")
	same(0, "cluster", "edit", "prod-eu", "--add-namespace", "web", "--label", "tier=gold")
	same(1, "cluster", "edit", "prod-eu", "--remove-namespace", "nope")
	same(1, "cluster", "edit", "prod-eu", "--lease-seconds", "120", "--if-version", "1")
	same(0, "cluster", "edit", "prod-eu", "--max-attempts", "3", "-o", "json")
	same(0, "cluster", "pause", "prod-eu", "--reason", "freeze")
	same(0, "cluster", "resume", "prod-eu", "-o", "json")
	same(0, "cluster", "disable", "staging", "--reason", "test")
	same(0, "cluster", "enable", "staging", "-o", "json")
	same(0, "cluster", "rotate-signing-key", "prod-eu", "--overlap", "2h")
	same(0, "cluster", "rotate-signing-key", "prod-eu", "-o", "json")
	same(1, "cluster", "rotate-signing-key", "nowhere")

	// Registration tokens and credentials.
	l, r := same(0, "token", "issue", "staging", "--ttl", "2h", "-o", "json")
	capture("token", "id", l, r)
	same(0, "token", "issue", "prod-us")
	same(0, "token", "list")
	same(0, "token", "list", "staging", "-o", "json")
	same(0, "token", "revoke", "{token}", "--reason", "leaked")
	same(1, "token", "revoke", "{token}")
	same(1, "token", "revoke", "rt-nosuchtoken")
	same(0, "credential", "list", "prod-eu")
	same(0, "credential", "list", "prod-eu", "-o", "json")

	// Jobs.
	l, r = same(0, "job", "submit", "--cluster", "prod-eu", "--kind", "apply", "--payload", cm("apps", "a"), "-o", "json")
	capture("job", "id", l, r)
	same(1, "job", "submit", "--cluster", "prod-eu", "--kind", "apply", "--payload", cm("kube-system", "b"))
	same(1, "job", "submit", "--cluster", "prod-eu", "--kind", "apply", "--payload", `{"apiVersion":`)
	same(0, "job", "list")
	same(0, "job", "get", "{job}")
	same(0, "job", "cancel", "{job}", "--reason", "not needed")
	l, r = same(0, "job", "retry", "{job}", "-o", "json")
	capture("retry", "id", l, r)
	same(1, "job", "delete", "{retry}")
	same(0, "job", "list", "-o", "json")

	same(0, "credential", "rotate", "prod-eu", "--reason", "drill")
	same(0, "credential", "list", "prod-eu")
	same(0, "credential", "revoke", "prod-eu", "-o", "json")
	same(0, "credential", "rotate", "prod-eu")

	// tether's CA (show prints certificates, which differ between two CAs).
	same(1, "ca", "show")
	same(0, "ca", "init")
	same(1, "ca", "init")
	same(0, "ca", "init", "--replace")

	// Webhooks and admin tokens.
	same(0, "webhook", "create", "--name", "hook", "--url", "https://hooks.example.com/t", "--events", "job.finished", "--org", "acme")
	// Names are unique within an organization.
	same(1, "webhook", "create", "--name", "hook", "--url", "https://hooks.example.com/u", "--events", "job.finished", "--org", "acme")
	same(0, "webhook", "create", "--name", "pager", "--url", "https://alerts.example.com/h", "--events", "credential.revoked", "-o", "json")
	same(0, "webhook", "list")
	same(0, "webhook", "list", "-o", "json")
	same(0, "webhook", "deliveries", "hook")
	same(0, "webhook", "deliveries", "hook", "-o", "json")
	same(0, "webhook", "edit", "hook", "--events", "job.finished,rollout.halted")
	same(0, "webhook", "edit", "hook", "--name", "hook", "-o", "json")
	same(1, "webhook", "edit", "hook", "--url", "http://10.0.0.1/hook")
	same(1, "webhook", "edit", "hook", "--url", "https://hooks.example.com/v", "--if-version", "1")
	same(1, "webhook", "edit", "nope", "--url", "https://hooks.example.com/v")
	same(0, "webhook", "rotate-secret", "hook", "--overlap", "2h")
	same(0, "webhook", "rotate-secret", "hook", "--overlap", "0s", "-o", "json")
	same(1, "webhook", "rotate-secret", "hook", "--overlap", "40d")
	same(0, "webhook", "test", "hook")
	same(1, "webhook", "test", "nope")
	same(1, "webhook", "redeliver", "wd-999")
	same(1, "webhook", "redeliver", "x")
	same(0, "webhook", "delete", "hook")
	same(1, "webhook", "delete", "hook")
	same(0, "admin-token", "create", "--name", "ci", "--role", "operator", "--org", "acme", "--expires", "90d")
	same(0, "admin-token", "create", "--name", "oncall", "--role", "viewer", "-o", "json")
	same(1, "admin-token", "create", "--name", "ci", "--role", "viewer")
	same(0, "admin-token", "list")
	same(0, "admin-token", "revoke", "ci", "--reason", "rotated")
	same(1, "admin-token", "revoke", "nobody")
	same(0, "admin-token", "list", "-o", "json")

	// Rollouts.
	same(0, "rollout", "create", "--name", "dry", "--selector", "env=prod", "--kind", "apply", "--payload", cm("web", "r"), "--dry-run")
	same(0, "rollout", "create", "--name", "r1", "--selector", "env=prod", "--kind", "apply", "--payload", cm("apps", "r"), "--max-parallel", "5")
	same(1, "rollout", "create", "--selector", "env=nowhere", "--kind", "apply", "--payload", cm("apps", "r"))
	same(0, "rollout", "list")
	same(0, "rollout", "get", "r1")
	same(0, "rollout", "get", "r1", "-o", "json")
	same(0, "rollout", "pause", "r1", "--reason", "look")
	same(0, "rollout", "resume", "r1", "-o", "json")
	same(0, "rollout", "abort", "r1", "--reason", "stop")
	same(1, "rollout", "retry-failed", "r1")
	same(0, "rollout", "list", "--state", "aborted", "-o", "json")

	// Feeds, and what deleting leaves.
	same(0, "events")
	same(0, "audit", "--action", "cluster.")
	same(0, "audit", "--action", "token.", "-o", "json")
	same(0, "cluster", "delete", "prod-us", "--yes", "--reason", "gone")
	same(1, "cluster", "delete", "prod-us", "--yes")
	same(2, "cluster", "delete", "staging")
	same(1, "cluster", "get", "prod-us")
	same(0, "job", "list", "--cluster", "prod-eu", "--state", "canceled")
	same(0, "cluster", "list", "-o", "json")

	// What works on the database itself refuses --server, saying why.
	for _, args := range [][]string{{"serve"}, {"backup", "--to", "x.db"}, {"restore", "--from", "x.db"}, {"keys", "init"}, {"demo"}} {
		res := remote.run(args...)
		if res.code != exitUsage || !strings.Contains(res.stderr, "does not run over --server: ") {
			t.Errorf("tether %s with --server:\n%s", strings.Join(args, " "), res)
		}
	}
}

// paritySide is one way of running the commands, and what it has learnt.
type paritySide struct {
	name string
	run  func(args ...string) result
	vars map[string]string
	ids  map[string]string // an id as printed -> its stand-in
	seen map[string]int    // per id prefix, how many stand-ins so far
}

func (s *paritySide) exec(args []string) result {
	expanded := make([]string, len(args))
	for i, a := range args {
		for k, v := range s.vars {
			a = strings.ReplaceAll(a, "{"+k+"}", v)
		}
		expanded[i] = a
	}
	return s.run(expanded...)
}

var (
	parityID       = regexp.MustCompile(`\b(cl|j|rt|cr|at|ro|sk|wh|ca)-[0-9a-z]{26}\b`)
	paritySecret   = regexp.MustCompile(`\b(tether_(reg|adm|cred)_[0-9A-Za-z_-]+|whsec_[0-9A-Za-z+/=]+)`)
	parityTime     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	parityDuration = regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|ms|s|m|h|d))+\b`)
	parityPart     = regexp.MustCompile(`(\d+(?:\.\d+)?)(ns|µs|ms|s|m|h|d)`)
	parityActor    = regexp.MustCompile(`\badmin(-token)?:[\w.@-]+`)
	parityKey      = regexp.MustCompile(`"x": "[A-Za-z0-9_-]+"`)
	// A key's endorsement is a signature over it: each side's key differs.
	parityEndorsement = regexp.MustCompile(`"endorsement": "[A-Za-z0-9+/=]+"`)
	paritySpaces      = regexp.MustCompile(`[ \t]+`)
)

// normalize puts aside what differs between two registries by nature: ids
// (each replaced by a stand-in numbered in order of first appearance, so
// that which record is which still counts), secrets, public keys, times,
// ages, and who acted (the operating-system user over --db, the admin
// token over --server); and the padding that aligns columns of values of
// other widths.
func (s *paritySide) normalize(out string) string {
	if s.ids == nil {
		s.ids, s.seen = map[string]string{}, map[string]int{}
	}
	out = paritySecret.ReplaceAllString(out, "<secret>")
	out = parityID.ReplaceAllStringFunc(out, func(id string) string {
		if st, ok := s.ids[id]; ok {
			return st
		}
		prefix, _, _ := strings.Cut(id, "-")
		s.seen[prefix]++
		st := fmt.Sprintf("%s-#%d", prefix, s.seen[prefix])
		s.ids[id] = st
		return st
	})
	out = parityTime.ReplaceAllString(out, "<time>")
	out = parityDuration.ReplaceAllStringFunc(out, roughDuration)
	out = parityActor.ReplaceAllString(out, "<actor>")
	out = parityKey.ReplaceAllString(out, `"x": <key>`)
	out = parityEndorsement.ReplaceAllString(out, `"endorsement": <signature>`)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(paritySpaces.ReplaceAllString(l, " "), " ")
	}
	return strings.Join(lines, "\n")
}

// roughDuration rounds a printed duration to ten minutes: the two sides
// run seconds apart, so ages and countdowns differ by seconds, while every
// lifetime, overlap and grace in the test is a multiple of ten minutes and
// must still agree.
func roughDuration(d string) string {
	unit := map[string]time.Duration{"ns": time.Nanosecond, "µs": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	var total time.Duration
	for _, m := range parityPart.FindAllStringSubmatch(d, -1) {
		n, _ := strconv.ParseFloat(m[1], 64)
		total += time.Duration(n * float64(unit[m[2]]))
	}
	return "~" + total.Round(10*time.Minute).String()
}

// lineDiff shows the lines that differ, local first.
func lineDiff(l, r string) string {
	ll, rl := strings.Split(l, "\n"), strings.Split(r, "\n")
	var b strings.Builder
	for i := range max(len(ll), len(rl)) {
		var a, c string
		if i < len(ll) {
			a = ll[i]
		}
		if i < len(rl) {
			c = rl[i]
		}
		if a != c {
			fmt.Fprintf(&b, "  line %d\n    --db:     %q\n    --server: %q\n", i+1, a, c)
		}
	}
	return b.String()
}
