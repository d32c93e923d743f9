package tui

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// fleet is what every view shares: the clusters (kept current by the watch),
// job counts per cluster and state (read from the registry's counters, which
// cost nothing however many jobs there are), and each cluster's credentials
// and registration tokens.
type fleet struct {
	byID    map[string]*registry.Cluster
	sorted  []*registry.Cluster // by name
	counts  map[string]map[registry.JobState]int64
	totals  map[registry.JobState]int64
	creds   map[string][]registry.Credential // per cluster, newest first
	tokens  map[string][]registry.RegistrationToken
	loaded  bool // the first cluster list arrived
	counted bool // the first counts arrived
	// queues is each cluster's queue health (queues.go), by cluster id.
	queues       map[string]registry.QueueHealth
	queuesLoaded bool
	queuesErr    error
	// version changes whenever anything above does, for render caches.
	version int
}

func newFleet() *fleet {
	return &fleet{
		byID: map[string]*registry.Cluster{}, counts: map[string]map[registry.JobState]int64{},
		totals: map[registry.JobState]int64{}, creds: map[string][]registry.Credential{},
		tokens: map[string][]registry.RegistrationToken{}, queues: map[string]registry.QueueHealth{},
	}
}

func (f *fleet) cluster(id string) *registry.Cluster { return f.byID[id] }

// clusterName is the display name of a cluster id (the id itself when the
// cluster is unknown, e.g. deleted).
func (f *fleet) clusterName(id string) string {
	if c := f.byID[id]; c != nil {
		return c.Name
	}
	return id
}

// errClusterNameNeeded is what a filter's cluster: without a name says.
const errClusterNameNeeded = "cluster: needs a name, or the start of one (cluster:prod-eu)"

// clusterWord resolves a filter's cluster:NAME to one cluster's id, or says
// what is wrong: no name, several clusters match, or none does (unless
// unknownIsID: then the word is taken as the id of a deleted cluster, whose
// audit trail outlives it).
func (f *fleet) clusterWord(v string, unknownIsID bool) (id, err string) {
	found := f.resolve(v)
	switch {
	case len(found) == 1:
		return found[0].ID, ""
	case len(found) > 1:
		return "", "cluster:" + v + " matches several clusters; type more of the name"
	case v == "":
		return "", errClusterNameNeeded
	case unknownIsID:
		return v, ""
	}
	return "", "no cluster matches " + v
}

// resolve finds clusters by id, exact name, or name prefix
// (case-insensitive), for filters and commands.
func (f *fleet) resolve(ref string) []*registry.Cluster {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil
	}
	if c := f.byID[ref]; c != nil {
		return []*registry.Cluster{c}
	}
	var exact, prefix []*registry.Cluster
	for _, c := range f.sorted {
		switch {
		case strings.EqualFold(c.Name, ref):
			exact = append(exact, c)
		case strings.HasPrefix(strings.ToLower(c.Name), strings.ToLower(ref)), strings.HasPrefix(c.ID, ref):
			prefix = append(prefix, c)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return prefix
}

func (f *fleet) setClusters(list []registry.Cluster) {
	clear(f.byID)
	for i := range list {
		c := list[i]
		f.byID[c.ID] = &c
	}
	f.loaded = true
	f.resort()
}

// learn records clusters read before the list is in (a page's, see
// startWatch), for their names and states; the list replaces them.
func (f *fleet) learn(list []registry.Cluster) {
	if f.loaded || len(list) == 0 {
		return
	}
	for i := range list {
		if f.byID[list[i].ID] == nil {
			c := list[i]
			f.byID[c.ID] = &c
		}
	}
	f.version++
}

// upsert records a cluster's new state and reports whether the order of
// f.sorted may have changed (a new cluster, or a renamed one): then the
// caller resorts. Otherwise the cluster takes its old one's place in
// f.sorted: a fleet's heartbeats change every cluster's status every 30 s,
// and resorting 50,000 clusters for each batch of them would cost more than
// the batch itself.
func (f *fleet) upsert(c *registry.Cluster) (reorder bool) {
	old := f.byID[c.ID]
	f.byID[c.ID] = c
	if old == nil || old.Name != c.Name {
		return true
	}
	i, found := slices.BinarySearchFunc(f.sorted, old, compareClusters)
	if !found || f.sorted[i] != old {
		return true
	}
	f.sorted[i] = c
	f.version++
	return false
}

func (f *fleet) remove(id string) {
	delete(f.byID, id)
	delete(f.counts, id)
	delete(f.creds, id)
	delete(f.tokens, id)
	f.recountTotals()
}

func (f *fleet) resort() {
	f.sorted = f.sorted[:0]
	for _, c := range f.byID {
		f.sorted = append(f.sorted, c)
	}
	slices.SortFunc(f.sorted, compareClusters)
	f.version++
}

// compareClusters is f.sorted's order: by name, case-insensitive, then id.
func compareClusters(a, b *registry.Cluster) int {
	return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.ID, b.ID))
}

func (f *fleet) setCounts(list []registry.JobCount) {
	// A new map, sized, rather than the old one cleared: over a fleet of
	// 50,000 clusters the list is read at start, and every map grown
	// entry by entry was a fifth of the first frame's CPU.
	f.counts = make(map[string]map[registry.JobState]int64, len(f.counts))
	clear(f.totals)
	for i := 0; i < len(list); {
		// The list comes ordered by cluster: one map per cluster, of the
		// size it needs.
		j := i + 1
		for j < len(list) && list[j].ClusterID == list[i].ClusterID {
			j++
		}
		m := f.counts[list[i].ClusterID]
		if m == nil {
			m = make(map[registry.JobState]int64, j-i)
			f.counts[list[i].ClusterID] = m
		}
		for _, c := range list[i:j] {
			m[c.State] = c.Count
			f.totals[c.State] += c.Count
		}
		i = j
	}
	f.counted = true
	f.version++
}

func (f *fleet) recountTotals() {
	clear(f.totals)
	for _, m := range f.counts {
		for st, n := range m {
			f.totals[st] += n
		}
	}
	f.version++
}

// count is the number of jobs in a state, of one cluster or (id "") of all.
func (f *fleet) count(clusterID string, st registry.JobState) int64 {
	if clusterID == "" {
		return f.totals[st]
	}
	return f.counts[clusterID][st]
}

func (f *fleet) total(clusterID string) int64 {
	var n int64
	m := f.totals
	if clusterID != "" {
		m = f.counts[clusterID]
	}
	for _, v := range m {
		n += v
	}
	return n
}

func (f *fleet) setCredentials(byCluster map[string][]registry.Credential) {
	f.creds = byCluster
	f.version++
}

func (f *fleet) upsertCredential(c *registry.Credential) {
	list := f.creds[c.ClusterID]
	if i := slices.IndexFunc(list, func(x registry.Credential) bool { return x.ID == c.ID }); i >= 0 {
		list[i] = *c
	} else {
		list = append([]registry.Credential{*c}, list...)
		slices.SortFunc(list, func(a, b registry.Credential) int { return b.CreatedAt.Compare(a.CreatedAt) })
	}
	f.creds[c.ClusterID] = list
	f.version++
}

func (f *fleet) setTokens(list []registry.RegistrationToken) {
	clear(f.tokens)
	for _, t := range list {
		f.tokens[t.ClusterID] = append(f.tokens[t.ClusterID], t)
	}
	f.version++
}

func (f *fleet) upsertToken(t *registry.RegistrationToken) {
	list := f.tokens[t.ClusterID]
	if i := slices.IndexFunc(list, func(x registry.RegistrationToken) bool { return x.ID == t.ID }); i >= 0 {
		list[i] = *t
	} else {
		list = append([]registry.RegistrationToken{*t}, list...)
		slices.SortFunc(list, func(a, b registry.RegistrationToken) int { return b.CreatedAt.Compare(a.CreatedAt) })
	}
	f.tokens[t.ClusterID] = list
	f.version++
}

// liveCredential is the cluster's newest credential that still works
// (active or in its rotation grace), or nil.
func (f *fleet) liveCredential(clusterID string, now time.Time) *registry.Credential {
	for i := range f.creds[clusterID] {
		c := &f.creds[clusterID][i]
		if st := c.State(now); st == registry.CredentialActive || st == registry.CredentialGrace {
			return c
		}
	}
	return nil
}

// unreachable lists the clusters no agent can be taking jobs for
// (registry.Unreachable).
func (f *fleet) unreachable(now time.Time) registry.Unreachable {
	var out registry.Unreachable
	for _, c := range f.sorted {
		out.Add(c, now)
	}
	return out
}

// Messages of the fleet's loads.

type countsMsg struct {
	counts []registry.JobCount
	err    error
}

type credentialsMsg struct {
	byCluster map[string][]registry.Credential
	tokens    []registry.RegistrationToken
	err       error
}

func loadCounts(b Backend) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), storeReadTimeout)
		defer cancel()
		c, err := b.JobCounts(ctx)
		return countsMsg{counts: c, err: err}
	}
}

// loadCredentials reads every cluster's credentials and all tokens. The
// registry lists credentials one cluster at a time, so this costs a query
// per cluster; it runs once at start and after a reset, and the watch keeps
// it current afterwards.
func loadCredentials(b Backend, ids []string) tea.Cmd {
	return func() tea.Msg {
		ctx := context.Background()
		out := map[string][]registry.Credential{}
		for _, id := range ids {
			list, err := b.ListCredentials(ctx, id)
			if registry.ErrorCode(err) == registry.CodeNotFound {
				continue // deleted meanwhile
			}
			if err != nil {
				return credentialsMsg{err: err}
			}
			out[id] = list
		}
		tokens, err := b.ListTokens(ctx, "")
		return credentialsMsg{byCluster: out, tokens: tokens, err: err}
	}
}
