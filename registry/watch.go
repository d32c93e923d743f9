package registry

import (
	"context"
	"slices"
	"strconv"
)

// WatchEventType is the kind of a watch event (Consul's WatchList semantics).
type WatchEventType string

const (
	WatchUpsert        WatchEventType = "upsert"
	WatchDelete        WatchEventType = "delete"
	WatchEndOfSnapshot WatchEventType = "end_of_snapshot"
	// WatchReset means the watcher fell behind the feed's retention: what it
	// holds may be stale. A fresh snapshot follows, then EndOfSnapshot.
	WatchReset WatchEventType = "reset"
)

// WatchEvent is one event of a watch. For upserts exactly one entity field is
// set. Deleting a cluster deletes everything it owns; only the cluster's
// delete is sent.
type WatchEvent struct {
	Type      WatchEventType
	Seq       int64
	Kind      EntityKind
	ID        string
	ClusterID string

	Cluster    *Cluster
	Job        *Job
	Event      *Event
	Audit      *AuditEntry
	Token      *RegistrationToken
	Credential *Credential
	Rollout    *Rollout
}

// WatchParams says what to watch and from where.
type WatchParams struct {
	// Since is the feed position to continue from (LatestSeq, or an event's
	// Seq; positions start at 1, so a position read from the feed is never
	// zero). Zero asks for a snapshot first: every cluster and every open job (of the kinds watched), then
	// EndOfSnapshot. Events and audit entries have no snapshot; read them with
	// ListEvents and ListAudit.
	Since int64
	// Kinds to watch; empty watches all.
	Kinds []EntityKind
	// Buffer is the channel's capacity (default 256). A slow reader holds the
	// watcher back; it never loses events.
	Buffer int
}

// Watch streams changes: a snapshot when p.Since is zero, EndOfSnapshot with
// the feed position, then upserts and deletes as they are committed, by this
// process or another. A p.Since past the retention, or past the feed's end
// (a database restored from an older backup), gets Reset and a snapshot. The
// channel closes when ctx ends or the registry closes.
//
// An organization-scoped actor sees only its organization's clusters, what
// they own and its rollouts; a cluster moved out of the organization is sent
// as deleted.
func (r *Registry) Watch(ctx context.Context, p WatchParams) (<-chan WatchEvent, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	if err := r.hub.start(); err != nil {
		return nil, err
	}
	if p.Buffer <= 0 {
		p.Buffer = 256
	}
	org := orgScope(ctx)
	// What an organization-scoped actor may see changes with the clusters'
	// organizations, so its watch follows the clusters even when it asked
	// for none of them (scopeWatch then keeps them to itself).
	withClusters := len(p.Kinds) == 0 || slices.Contains(p.Kinds, EntityCluster)
	if org != "" && !withClusters {
		p.Kinds = append(slices.Clip(p.Kinds), EntityCluster)
	}
	out := make(chan WatchEvent, p.Buffer)
	go func() {
		defer close(out)
		_ = r.watch(ctx, p, out)
	}()
	if org != "" {
		return r.scopeWatch(ctx, org, withClusters, out), nil
	}
	return out, nil
}

// scopeWatch passes on the events an actor confined to org may see; cluster
// events only when clusters is set (the actor watches them).
func (r *Registry) scopeWatch(ctx context.Context, org string, clusters bool, in <-chan WatchEvent) <-chan WatchEvent {
	out := make(chan WatchEvent, cap(in))
	go func() {
		defer close(out)
		visible := map[string]bool{} // cluster id: in org
		inOrg := func(id string) bool {
			v, known := visible[id]
			if !known {
				c, err := r.store.ClusterGet(ctx, id)
				v = err == nil && c.Organization == org
				visible[id] = v
			}
			return v
		}
		for ev := range in {
			keep := false
			switch {
			case ev.Type == WatchEndOfSnapshot || ev.Type == WatchReset:
				keep = true
			case ev.Kind == EntityCluster && ev.Type == WatchUpsert:
				was, now := visible[ev.ID], ev.Cluster.Organization == org
				visible[ev.ID] = now
				keep = now
				if was && !now { // moved out of the organization: gone, as far as org can tell
					ev = WatchEvent{Type: WatchDelete, Seq: ev.Seq, Kind: EntityCluster, ID: ev.ID, ClusterID: ev.ID}
					keep = true
				}
			case ev.Kind == EntityCluster:
				keep = visible[ev.ID]
				delete(visible, ev.ID)
			case ev.Kind == EntityRollout:
				keep = ev.Rollout != nil && ev.Rollout.Organization == org
			case ev.ClusterID != "":
				keep = inOrg(ev.ClusterID)
			}
			if ev.Kind == EntityCluster && !clusters {
				keep = false // followed for the scope, not asked for
			}
			if !keep {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// LatestSeq returns the current end of the change feed, to watch from.
func (r *Registry) LatestSeq(ctx context.Context) (int64, error) {
	latest, _, err := r.store.ChangesLatest(ctx)
	return latest, err
}

func (r *Registry) watch(ctx context.Context, p WatchParams, out chan<- WatchEvent) error {
	wants := func(k EntityKind) bool { return len(p.Kinds) == 0 || slices.Contains(p.Kinds, k) }
	send := func(ev WatchEvent) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	cursor := p.Since
	needSnapshot := cursor == 0
	if !needSnapshot {
		latest, _, err := r.store.ChangesLatest(ctx)
		if err != nil {
			return err
		}
		if cursor > latest {
			// A position this feed never reached (the database was restored
			// from an older backup, or the client watched another tether):
			// following from it would skip every change up to it without a
			// word. Start over, as for a position past retention.
			if !send(WatchEvent{Type: WatchReset, Seq: cursor}) {
				return ctx.Err()
			}
			needSnapshot = true
		}
	}
	if !needSnapshot && !send(WatchEvent{Type: WatchEndOfSnapshot, Seq: cursor}) {
		return ctx.Err()
	}
	for {
		if needSnapshot {
			seq, err := r.snapshot(ctx, wants, send)
			if err != nil {
				return err
			}
			cursor = seq
			if !send(WatchEvent{Type: WatchEndOfSnapshot, Seq: cursor}) {
				return ctx.Err()
			}
			needSnapshot = false
		}
		// Follow.
		for {
			// The oldest position kept is read after the changes: a prune
			// between a check and the read would otherwise skip entries
			// without a word.
			page, err := r.feed.page(ctx, cursor, feedBatch)
			if err != nil {
				return err
			}
			changes, oldest := page.changes, page.oldest
			if oldest > cursor+1 {
				// Entries we have not seen were pruned: start over.
				if !send(WatchEvent{Type: WatchReset, Seq: cursor}) {
					return ctx.Err()
				}
				needSnapshot = true
				break
			}
			if len(changes) > 0 {
				ok, complete := r.emit(ctx, changes, wants, send)
				if !ok {
					return ctx.Err()
				}
				if !complete {
					// An entity could not be read: rather than skip a change,
					// start over from a snapshot.
					if !send(WatchEvent{Type: WatchReset, Seq: cursor}) {
						return ctx.Err()
					}
					needSnapshot = true
					break
				}
				cursor = changes[len(changes)-1].Seq
				if len(changes) == feedBatch {
					continue // there may be more already
				}
				// The page ended at the feed's end when it was read: wait
				// for the follower to see a later change (at once when it
				// already has) rather than read an empty page.
			}
			wait, ok := r.hub.waitPast(cursor)
			if !ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-wait:
			}
		}
	}
}

func (r *Registry) snapshot(ctx context.Context, wants func(EntityKind) bool, send func(WatchEvent) bool) (int64, error) {
	// Read the position first: anything committed after it is replayed from
	// the feed, so nothing is missed (some upserts may arrive twice).
	seq, _, err := r.store.ChangesLatest(ctx)
	if err != nil {
		return 0, err
	}
	if wants(EntityCluster) {
		clusters, err := r.store.ClusterList(ctx, ClusterListParams{})
		if err != nil {
			return 0, err
		}
		for i := range clusters {
			c := &clusters[i]
			if !send(WatchEvent{Type: WatchUpsert, Kind: EntityCluster, ID: c.ID, ClusterID: c.ID, Cluster: c}) {
				return 0, ctx.Err()
			}
		}
	}
	if wants(EntityJob) {
		// Keyset paging: with OFFSET, a job leaving the open states while the
		// snapshot is read would shift the next page and skip a job that
		// never changes again (so the feed would never bring it back).
		const page = 1000
		var after *JobCursor
		for {
			jobs, err := r.store.JobList(ctx, JobListParams{States: []JobState{JobQueued, JobInProgress}, OldestFirst: true, Limit: page, After: after})
			if err != nil {
				return 0, err
			}
			if len(jobs) > 0 {
				last := jobs[len(jobs)-1]
				after = &JobCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			for i := range jobs {
				j := &jobs[i]
				if !send(WatchEvent{Type: WatchUpsert, Kind: EntityJob, ID: j.ID, ClusterID: j.ClusterID, Job: j}) {
					return 0, ctx.Err()
				}
			}
			if len(jobs) < page {
				break
			}
		}
	}
	if wants(EntityRollout) {
		rollouts, err := r.store.RolloutList(ctx, RolloutListParams{States: []RolloutState{RolloutRunning, RolloutPaused, RolloutHalted}})
		if err != nil {
			return 0, err
		}
		for i := range rollouts {
			ro := &rollouts[i]
			if !send(WatchEvent{Type: WatchUpsert, Kind: EntityRollout, ID: ro.ID, Rollout: ro}) {
				return 0, ctx.Err()
			}
		}
	}
	return seq, nil
}

// emit loads the entity of each change and sends it. An entity that no longer
// exists is skipped: its delete follows in the feed, or its cluster's did. ok
// is false when the watcher went away; complete is false when an entity could
// not be read (the changes from that one on were not sent).
func (r *Registry) emit(ctx context.Context, changes []Change, wants func(EntityKind) bool, send func(WatchEvent) bool) (ok, complete bool) {
	for _, c := range changes {
		if !wants(c.Kind) {
			continue
		}
		if c.Op == OpDelete {
			if !send(WatchEvent{Type: WatchDelete, Seq: c.Seq, Kind: c.Kind, ID: c.ID, ClusterID: c.ClusterID}) {
				return false, false
			}
			continue
		}
		ev, exists, err := r.feed.entity(ctx, c, r.loadChange)
		switch {
		case err != nil:
			return ctx.Err() == nil, false
		case !exists:
			continue
		}
		if !send(ev) {
			return false, false
		}
	}
	return true, true
}

// loadChange loads the record a change is about. A bookkeeping entry (the
// feed's first row) carries none: it is reported as not found, and skipped.
func (r *Registry) loadChange(ctx context.Context, c Change) (WatchEvent, error) {
	ev := WatchEvent{Type: WatchUpsert, Seq: c.Seq, Kind: c.Kind, ID: c.ID, ClusterID: c.ClusterID}
	var err error
	switch c.Kind {
	case EntityCluster:
		ev.Cluster, err = r.store.ClusterGet(ctx, c.ID)
	case EntityJob:
		ev.Job, err = r.store.JobGet(ctx, c.ID)
	case EntityToken:
		ev.Token, err = r.store.TokenGet(ctx, c.ID)
	case EntityCredential:
		// With its client certificate, as ListCredentials shows it: the
		// change of a credential issued with one carries it.
		if ev.Credential, err = r.store.CredentialGet(ctx, c.ID); err == nil {
			one := []Credential{*ev.Credential}
			err = r.withClientCertificates(ctx, ev.Credential.ClusterID, one)
			ev.Credential = &one[0]
		}
	case EntityEvent:
		ev.Event, err = r.oneEvent(ctx, c.ID)
	case EntityAudit:
		ev.Audit, err = r.oneAudit(ctx, c.ID)
	case EntityRollout:
		ev.Rollout, err = r.store.RolloutGet(ctx, c.ID)
	default:
		err = Errorf(CodeNotFound, "change %d is about no record", c.Seq)
	}
	return ev, err
}

func (r *Registry) oneEvent(ctx context.Context, id string) (*Event, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, Errorf(CodeNotFound, "bad event id %q", id)
	}
	list, err := r.store.EventList(ctx, EventListParams{AfterID: n - 1, BeforeID: n + 1, Limit: 1})
	if err != nil || len(list) == 0 {
		return nil, Errorf(CodeNotFound, "event %s is gone", id)
	}
	return &list[0], nil
}

func (r *Registry) oneAudit(ctx context.Context, id string) (*AuditEntry, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, Errorf(CodeNotFound, "bad audit id %q", id)
	}
	list, err := r.store.AuditList(ctx, AuditListParams{AfterID: n - 1, BeforeID: n + 1, Limit: 1})
	if err != nil || len(list) == 0 {
		return nil, Errorf(CodeNotFound, "audit entry %s is gone", id)
	}
	redactWebhookAudit(&list[0])
	return &list[0], nil
}

// WaitJob blocks until the job is in a terminal state and returns it.
func (r *Registry) WaitJob(ctx context.Context, id string) (*Job, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seq, err := r.LatestSeq(ctx)
	if err != nil {
		return nil, err
	}
	events, err := r.Watch(ctx, WatchParams{Since: seq, Kinds: []EntityKind{EntityJob, EntityCluster}})
	if err != nil {
		return nil, err
	}
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.State.Terminal() {
		return j, nil
	}
	for ev := range events {
		switch {
		case ev.Type == WatchUpsert && ev.Job != nil && ev.Job.ID == j.ID && ev.Job.State.Terminal():
			return ev.Job, nil
		case ev.Type == WatchDelete && ev.Kind == EntityCluster && ev.ID == j.ClusterID:
			return nil, Errorf(CodeNotFound, "job %s was deleted with its cluster", j.ID)
		case ev.Type == WatchReset:
			if j, err = r.getJob(ctx, id); err != nil || j.State.Terminal() {
				return j, err
			}
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, Errorf(CodeUnavailable, "registry closed while waiting for job %s", id)
}
