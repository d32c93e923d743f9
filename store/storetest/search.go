package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// testSearchIndex pins the word filter's answers on tricky words: the
// stores serve words of 3 or more characters from a trigram index
// (migration 0023), and the index must give exactly the answers of the
// LIKE it narrows: a substring in any ASCII case (not other cases), %, _
// and \ as plain characters, quotes, words under 3 characters (which no
// trigram serves), an error set after the job was written, and a job
// deleted.
func testSearchIndex(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("edge-zone")
	b, _ := e.agent("Cluster-Zwei")
	type spec struct {
		cluster *registry.Agent
		name    string
		key     string
		err     string // reported after submission
	}
	specs := []spec{
		{a, "app-99999", "K_1%x", ""},
		{a, "app-12", `it's "quoted"`, `Émile café \ back`},
		{b, "wordpress", "plain", "lease ÉTÉ expired"},
		{b, "app-99998", "gone", ""},
		{b, "nc", "", "HelmReleaseFailed"},
		{a, "app-199999", "K1x", "50%_done"},
	}
	var gone string
	for _, s := range specs {
		payload := strings.Replace(applyPayload, `"name":"nc"`, `"name":"`+s.name+`"`, 1)
		j := e.submit(s.cluster.Cluster.ID, func(js *registry.JobSubmission) {
			js.Payload = json.RawMessage(payload)
			js.IdempotencyKey = s.key
		})
		if s.err != "" {
			claim, err := e.reg.AckJob(e.ctx, s.cluster, j.ID)
			wantNoErr(t, err)
			wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, s.cluster, j.ID, claim.ClaimID,
				registry.ResultReport{Outcome: registry.OutcomeFailed, Error: s.err})))
		}
		if s.key == "gone" {
			gone = j.ID
		}
	}
	_, err := e.reg.CancelJob(e.ctx, gone, "test")
	wantNoErr(t, err)
	_, err = e.reg.DeleteJob(e.ctx, gone, "test")
	wantNoErr(t, err)

	all, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Limit: 1000})
	wantNoErr(t, err)
	if len(all) != len(specs)-1 {
		t.Fatalf("%d jobs, want %d", len(all), len(specs)-1)
	}
	names := map[string]string{a.Cluster.ID: a.Cluster.Name, b.Cluster.ID: b.Cluster.Name}
	// want is the documented meaning, computed here: each word a substring,
	// in any ASCII case, of one of the job's texts.
	want := func(search string) []string {
		var ids []string
		for _, j := range all {
			texts := []string{j.ID, j.IdempotencyKey, j.Target.Namespace, j.Target.Name, j.Error, string(j.Kind), names[j.ClusterID]}
			ok := true
			for _, w := range strings.Fields(search) {
				ok = ok && slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(asciiLower(s), asciiLower(w)) })
			}
			if ok {
				ids = append(ids, j.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for _, search := range []string{
		"app-99999", "APP-99999", "app-9999", "99998", "app", "ap", "9", "p-1",
		"K_1%x", "k_1", "K_1x", "_", "%", "1%", "%_", "50%_", "0%_d", "K1", `\`, `\ b`, `\ back`,
		`it's`, `"quoted"`, `"`, `'s "q`, "'",
		"Émile", "émile", "ÉMILE", "mile", "café", "CAFÉ", "fé", "É", "ÉTÉ", "été", "lease",
		"helmrelease", "HELMRELEASEFAILED", "failed", "apply", "APPLY",
		"edge-zone", "zwei", "CLUSTER", "cluster-zwei app", "edge app-12", "zone 99999", "gone",
		"team-a app-1", "TEAM", "nosuchword", "app-99999 nosuch",
	} {
		found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: search, Limit: 1000})
		wantNoErr(t, err)
		n, err := e.reg.CountJobs(e.ctx, registry.JobListParams{Search: search})
		wantNoErr(t, err)
		got := jobIDs(found)
		slices.Sort(got)
		if w := want(search); !slices.Equal(got, w) || n != len(w) {
			t.Errorf("search %q: listed %v, counted %d, want %v", search, got, n, w)
		}
	}
}

// asciiLower folds ASCII letters only, as SQLite's LIKE does.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// testSearchIndexMerge: the word filter finds each rare word of jobs
// submitted one by one (on SQLite, one index segment each, which the
// writes no longer merge: migration 0031), before and after the background
// merger (registry.SearchMerger) merged them, and also once a job's error
// changed after the merge. The merger's runs end once there is nothing
// left to merge (at once on PostgreSQL, whose index keeps itself).
func testSearchIndexMerge(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("merge-zone")
	const n = 40
	ids := make([]string, n)
	for i := range n {
		payload := strings.Replace(applyPayload, `"name":"nc"`, fmt.Sprintf(`"name":"rare%03dword"`, i), 1)
		ids[i] = e.submit(a.Cluster.ID, func(js *registry.JobSubmission) { js.Payload = json.RawMessage(payload) }).ID
	}
	find := func(when string) {
		t.Helper()
		for i, id := range ids {
			found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: fmt.Sprintf("RARE%03dWORD", i), Limit: 10})
			wantNoErr(t, err)
			if got := jobIDs(found); !slices.Equal(got, []string{id}) {
				t.Fatalf("%s: search rare%03dword found %v, want [%s]", when, i, got, id)
			}
		}
		found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: "rare0", Limit: 1000})
		wantNoErr(t, err)
		if len(found) != n {
			t.Fatalf("%s: search rare0 found %d jobs, want %d", when, len(found), n)
		}
	}
	find("before merging")

	m := registry.NewSearchMerger(e.reg, registry.SearchMergerConfig{Pages: 2, Steps: 3})
	runs := 0
	for ; runs < 100; runs++ {
		rep, err := m.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Steps > 3 {
			t.Fatalf("a run took %d steps, more than the 3 it may", rep.Steps)
		}
		if rep.Steps < 3 {
			break // nothing left to merge
		}
	}
	if runs == 100 {
		t.Fatal("the merger found something to merge after 100 runs")
	}
	find("after merging")

	// A job changed after the merge: found by its new error, not by the
	// old name's job alone.
	claim, err := e.reg.AckJob(e.ctx, a, ids[7])
	wantNoErr(t, err)
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, ids[7], claim.ClaimID,
		registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "quokkaFailure"})))
	rep, err := m.RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Steps > 3 {
		t.Fatalf("a run took %d steps", rep.Steps)
	}
	find("after a change")
	found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: "quokka", Limit: 10})
	wantNoErr(t, err)
	if got := jobIDs(found); !slices.Equal(got, []string{ids[7]}) {
		t.Fatalf("search quokka found %v, want [%s]", got, ids[7])
	}
}
