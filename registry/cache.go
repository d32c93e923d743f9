package registry

import (
	"context"
	"strings"
	"sync"
	"time"
)

// recordCache keeps credentials, clusters and admin tokens that every agent
// request, every submission and every admin API request reads, so that the
// hot path does not query the store for them. It is only as fresh as the change feed allows:
//
//   - the hub evicts an entry when the feed reports a change to it (writes by
//     this process and by others alike);
//   - registry methods that change a credential or a cluster also evict it
//     at once, so that their caller sees the change immediately;
//   - an entry is cached only if the hub dispatched no change to it (nor,
//     for a credential, to its cluster) while it was being read: otherwise a
//     change committed just before the read could have been dispatched before
//     the entry existed, and never evict it. The cache remembers the position
//     of each recent eviction for that (changedSince); a busy feed of other
//     entities' changes, which never stops under load, no longer keeps every
//     entry out;
//   - nothing is served while the hub is not following the feed, and no entry
//     lives longer than cacheTTL.
type recordCache struct {
	hub *hub
	now func() time.Time // the registry's clock: entries age by it

	mu        sync.Mutex
	creds     map[string]cachedCredential
	clusters  map[string]cachedCluster
	byCluster map[string]map[string]struct{} // cluster id -> credential ids
	// names maps the name of a cluster cached after a lookup by that name
	// to its id (producers name clusters by name): a hit still checks the
	// cached record carries the name, since a rename only evicts the id.
	names map[string]string
	// admins are admin tokens, which every admin API request reads. Their
	// issue and revoke are audited without a cluster, and any such audit
	// entry in the feed drops them all (there are few; such entries are
	// rare next to submissions, which name their cluster).
	admins map[string]cachedAdminToken
	// roots says which CA certificates (by DER) client certificates chained
	// to are tether's CAs, and issued which credential each serial of
	// tether's CA was issued with (ca.go): neither ever changes, so neither
	// is evicted.
	roots  map[string]bool
	issued map[string]ClientCertificate

	// evictedAt is the feed position of the last change dispatched to each
	// key (credKey, clusterKey, adminsKey) the cache evicts for, and
	// evictedFloor the highest position forgotten when it was cleared: a
	// read that started below the floor cannot tell and is not cached.
	evictedAt    map[string]int64
	evictedFloor int64
}

// maxEvictions bounds evictedAt; reaching it clears it (see evictedFloor).
// Heartbeats evict nothing (OpStatus); what does (records changed,
// credentials issued, rotated or revoked, registrations) comes far slower,
// so the map is cleared rarely, and a clear costs only the reads then in
// flight their caching.
const maxEvictions = 50000

func credKey(id string) string    { return "credential:" + id }
func clusterKey(id string) string { return "cluster:" + id }

const adminsKey = "admin-tokens"

// cacheTTL is longer than an agent's period (a poll waits at most 30 s, and
// a heartbeat follows every 30 s): with a shorter one, every poll of a
// steady fleet, and every held poll's wake-up, read its credential and
// cluster again (at 18,000 agents, a fifth of serve's CPU and the read
// connections' queue, behind which the hub's own feed reads waited). What
// makes an entry stale is evicted through the feed; the TTL only bounds an
// entry's age when that fails unnoticed.
const (
	cacheTTL        = 2 * time.Minute
	cacheMaxEntries = 100000
)

// Cached records are shared by every reader: nobody may modify them.
type cachedCredential struct {
	cred *Credential
	at   time.Time
}

type cachedAdminToken struct {
	token *AdminToken
	at    time.Time
}

// A cached cluster's Status is the one read with the record, and is not
// kept fresh: status changes (OpStatus, a heartbeat each) neither evict it
// nor its credentials. The cache's readers (agent authentication, polls,
// submissions) use the record; what shows the status (GetCluster,
// ListClusters, the watch) reads the store.
type cachedCluster struct {
	cluster *Cluster
	at      time.Time
}

func newRecordCache(h *hub, now func() time.Time) *recordCache {
	c := &recordCache{hub: h, now: now, creds: map[string]cachedCredential{}, clusters: map[string]cachedCluster{},
		byCluster: map[string]map[string]struct{}{}, names: map[string]string{}, admins: map[string]cachedAdminToken{},
		roots: map[string]bool{}, issued: map[string]ClientCertificate{}, evictedAt: map[string]int64{}}
	h.evict = c.evictChange
	return c
}

// credential returns a cached credential, or loads and (when safe) caches it.
// The result is shared: read-only.
func (c *recordCache) credential(ctx context.Context, store Store, id string) (*Credential, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.creds[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < cacheTTL && c.hub.following() {
		return e.cred, nil
	}
	seq, following := c.hub.positionIfFollowing()
	cred, err := store.CredentialGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if following {
		c.hub.ifFollowing(func() {
			c.mu.Lock() // lock order: hub, then cache (as dispatch)
			defer c.mu.Unlock()
			if len(c.creds) < cacheMaxEntries && !c.changedSince(seq, credKey(id), clusterKey(cred.ClusterID)) {
				c.creds[id] = cachedCredential{cred: cred, at: now}
				set := c.byCluster[cred.ClusterID]
				if set == nil {
					set = map[string]struct{}{}
					c.byCluster[cred.ClusterID] = set
				}
				set[id] = struct{}{}
			}
		})
	}
	return cred, nil
}

// cluster returns a cached cluster (by id), or loads and caches it. The
// result is shared: read-only.
func (c *recordCache) cluster(ctx context.Context, store Store, id string) (*Cluster, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.clusters[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < cacheTTL && c.hub.following() {
		return e.cluster, nil
	}
	return c.loadCluster(now, func() (*Cluster, error) { return store.ClusterGet(ctx, id) }, false)
}

// clusterByRef is GetCluster's lookup (an id, else a name) through the
// cache: a name is looked up in the store once, then served like an id.
// Only a name spelt exactly as the cluster's is cached; another spelling
// (the store matches names without regard to case) always asks the store.
func (c *recordCache) clusterByRef(ctx context.Context, store Store, ref string) (*Cluster, error) {
	c.mu.Lock()
	id, named := c.names[ref]
	c.mu.Unlock()
	if named && !strings.HasPrefix(ref, "cl-") { // an id is never taken for a name
		if cl, err := c.cluster(ctx, store, id); err == nil && cl.Name == ref {
			return cl, nil
		}
	}
	cl, err := c.cluster(ctx, store, ref)
	if ErrorCode(err) != CodeNotFound {
		return cl, err
	}
	return c.loadCluster(c.now(), func() (*Cluster, error) { return store.ClusterGetByName(ctx, ref) }, true)
}

// loadCluster reads a cluster from the store and caches it when safe (see
// recordCache), under its name too when byName.
func (c *recordCache) loadCluster(now time.Time, load func() (*Cluster, error), byName bool) (*Cluster, error) {
	seq, following := c.hub.positionIfFollowing()
	cl, err := load()
	if err != nil {
		return nil, err
	}
	if following {
		c.hub.ifFollowing(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.clusters) < cacheMaxEntries && !c.changedSince(seq, clusterKey(cl.ID)) {
				c.clusters[cl.ID] = cachedCluster{cluster: cl, at: now}
				if byName {
					c.names[cl.Name] = cl.ID
				}
			}
		})
	}
	return cl, nil
}

// adminToken returns a cached admin token, or loads and (when safe) caches
// it. The result is shared: read-only. Its expiry is the caller's to check.
func (c *recordCache) adminToken(ctx context.Context, store Store, id string) (*AdminToken, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.admins[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < cacheTTL && c.hub.following() {
		return e.token, nil
	}
	seq, following := c.hub.positionIfFollowing()
	t, err := store.AdminTokenGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if following {
		c.hub.ifFollowing(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.admins) < cacheMaxEntries && !c.changedSince(seq, adminsKey) {
				c.admins[id] = cachedAdminToken{token: t, at: now}
			}
		})
	}
	return t, nil
}

// rootKnown says whether root (a CA certificate's DER) is one of tether's
// CAs, if that is known.
func (c *recordCache) rootKnown(root string) (ours, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ours, known = c.roots[root]
	return ours, known
}

func (c *recordCache) rememberRoot(root string, ours bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.roots) < cacheMaxEntries {
		c.roots[root] = ours
	}
}

// issuedCert returns the record of the certificate with serial (hex), if
// known.
func (c *recordCache) issuedCert(serial string) (ClientCertificate, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.issued[serial]
	return rec, ok
}

func (c *recordCache) rememberIssuedCerts(certs []ClientCertificate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rec := range certs {
		if len(c.issued) >= cacheMaxEntries {
			return
		}
		c.issued[rec.Serial] = rec
	}
}

// evictAdminTokens drops every cached admin token.
func (c *recordCache) evictAdminTokens() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.admins)
}

// evictChange drops what a change-feed entry makes stale. The hub calls it
// with its own lock held; it takes only the cache's.
func (c *recordCache) evictChange(ch Change) {
	switch ch.Kind {
	case EntityCredential:
		c.evictCredential(ch.ID)
		c.evictedSince(ch.Seq, credKey(ch.ID))
	case EntityCluster:
		if ch.Op == OpStatus {
			// A heartbeat: the cached record, all its readers use, is
			// unchanged (see cachedCluster).
			return
		}
		c.evictCluster(ch.ID)
		c.evictedSince(ch.Seq, clusterKey(ch.ID))
	case EntityAudit:
		if ch.ClusterID == "" { // perhaps an admin token issued or revoked
			c.evictAdminTokens()
			c.evictedSince(ch.Seq, adminsKey)
		}
	}
}

// evictedSince records that the change at seq evicted key.
func (c *recordCache) evictedSince(seq int64, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.evictedAt) >= maxEvictions {
		clear(c.evictedAt)
		c.evictedFloor = seq - 1 // every position forgotten is below this change's
	}
	c.evictedAt[key] = seq
}

// changedSince says whether a change dispatched after seq (the hub's
// position when a read started) evicted any of keys, or may have: then what
// the read returned may be older than that change, and must not be cached.
// The caller holds c.mu.
func (c *recordCache) changedSince(seq int64, keys ...string) bool {
	if seq < c.evictedFloor {
		return true
	}
	for _, k := range keys {
		if c.evictedAt[k] > seq {
			return true
		}
	}
	return false
}

func (c *recordCache) evictCredential(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.creds[id]; ok {
		delete(c.byCluster[e.cred.ClusterID], id)
		delete(c.creds, id)
	}
}

// evictCluster drops a cluster and the credentials cached with it (an agent's
// authentication carries its cluster's state and policy).
func (c *recordCache) evictCluster(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clusters[id]; ok && c.names[e.cluster.Name] == id {
		delete(c.names, e.cluster.Name)
	}
	delete(c.clusters, id)
	for credID := range c.byCluster[id] {
		delete(c.creds, credID)
	}
	delete(c.byCluster, id)
}
