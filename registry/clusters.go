package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CreateCluster creates a cluster in state Pending and issues its first
// registration token (valid for tokenTTL, or the default when zero). A spec
// whose policy is entirely zero gets DefaultPolicy.
func (r *Registry) CreateCluster(ctx context.Context, spec ClusterSpec, tokenTTL time.Duration) (*Cluster, *IssuedToken, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, nil, err
	}
	if err := checkOrgScope(ctx, &spec); err != nil {
		return nil, nil, err
	}
	if spec.Policy.LeaseSeconds == 0 && spec.Policy.MaxAttempts == 0 && len(spec.Policy.RequiredCapabilities) == 0 {
		flags := spec.Policy // the booleans: nothing in DefaultPolicy sets them
		spec.Policy = DefaultPolicy()
		spec.Policy.RequireClientCertificate, spec.Policy.RequireSignedPayloads, spec.Policy.RequireEncryptedPayloads = flags.RequireClientCertificate, flags.RequireSignedPayloads, flags.RequireEncryptedPayloads
		spec.Policy.AllowLegacyPayloadSignatures = flags.AllowLegacyPayloadSignatures
	}
	if err := spec.Normalize(); err != nil {
		return nil, nil, err
	}
	if err := r.canSeal(&spec); err != nil {
		return nil, nil, err
	}
	now := r.Now()
	c := Cluster{ID: newClusterID(), ClusterSpec: spec, State: ClusterPending, Version: 1, CreatedAt: now, UpdatedAt: now}
	issued, err := r.newToken(c.ID, tokenTTL, now, ActorFrom(ctx).String())
	if err != nil {
		return nil, nil, err
	}
	err = r.store.ClusterCreate(ctx, ClusterCreateParams{
		Cluster: c,
		Token:   &issued.Token,
		Audit: []AuditEntry{
			r.auditEntry(ctx, AuditClusterCreate, c.ID, "cluster", c.ID, ""),
			r.auditEntry(ctx, AuditTokenIssue, c.ID, "token", issued.Token.ID, "first token of a new cluster"),
		},
	})
	if err != nil {
		return nil, nil, err
	}
	c.Status = ClusterStatus{Capabilities: []string{}, Conditions: []Condition{}}
	return &c, issued, nil
}

// GetCluster returns a cluster by id or, failing that, by display name.
func (r *Registry) GetCluster(ctx context.Context, idOrName string) (*Cluster, error) {
	ref := strings.TrimSpace(idOrName)
	if ref == "" {
		return nil, Errorf(CodeInvalid, "a cluster id or name is required")
	}
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	c, err := r.store.ClusterGet(ctx, ref)
	if ErrorCode(err) == CodeNotFound {
		c, err = r.store.ClusterGetByName(ctx, ref)
	}
	if ErrorCode(err) == CodeNotFound || (err == nil && !inScope(ctx, c)) {
		return nil, errNoCluster(ref)
	}
	return c, err
}

// errNoCluster is the answer for a cluster that does not exist, or that the
// actor may not see: the two are indistinguishable on purpose.
func errNoCluster(ref string) error {
	return Errorf(CodeNotFound, "no cluster has the id or name %q (tether cluster list shows them)", ref)
}

// checkOrgScope keeps an org-scoped actor's clusters in its organization: a
// spec without one gets it, a spec naming another is refused.
func checkOrgScope(ctx context.Context, spec *ClusterSpec) error {
	org := orgScope(ctx)
	switch {
	case org == "":
	case strings.TrimSpace(spec.Organization) == "":
		spec.Organization = org
	case strings.TrimSpace(spec.Organization) != org:
		return Errorf(CodeForbidden, "%s may only manage clusters of organization %q, not %q", ActorFrom(ctx), org, strings.TrimSpace(spec.Organization))
	}
	return nil
}

// clusterForSubmit returns the cluster a submission names: by id or name
// through the record cache (producers submit constantly, usually naming the
// cluster; the record, not its status, is what the checks need), else from
// the store.
func (r *Registry) clusterForSubmit(ctx context.Context, idOrName string) (*Cluster, error) {
	if r.hub.start() == nil {
		if c, err := r.cache.clusterByRef(ctx, r.store, strings.TrimSpace(idOrName)); err == nil {
			if !inScope(ctx, c) {
				return nil, errNoCluster(idOrName)
			}
			return c, nil
		}
	}
	return r.GetCluster(ctx, idOrName)
}

// clusterOfAgent is an authenticated agent's cluster as it is now, from the
// record cache, else from the store: not through GetCluster, whose
// permission check is an admin's.
func (r *Registry) clusterOfAgent(ctx context.Context, id string) (*Cluster, error) {
	if r.hub.start() == nil {
		if c, err := r.cache.clusterByRef(ctx, r.store, id); err == nil {
			return c, nil
		}
	}
	c, err := r.store.ClusterGet(ctx, id)
	if ErrorCode(err) == CodeNotFound {
		return nil, errNoCluster(id)
	}
	return c, err
}

// ListClusters returns clusters ordered by name.
func (r *Registry) ListClusters(ctx context.Context, p ClusterListParams) ([]Cluster, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	if err := checkQueryText("selector", p.Selector); err != nil {
		return nil, err
	}
	if err := checkQueryText("organization", p.Organization); err != nil {
		return nil, err
	}
	sel, err := ParseSelector(p.Selector)
	if err != nil {
		return nil, err
	}
	if org := orgScope(ctx); org != "" {
		if p.Organization != "" && p.Organization != org {
			return []Cluster{}, nil
		}
		p.Organization = org
	}
	if sel.Empty() {
		return r.store.ClusterList(ctx, p)
	}
	// The stores don't match labels: read pages of the store's order and
	// keep the matching clusters until there are p.Limit of them.
	matching := []Cluster{}
	for {
		clusters, err := r.store.ClusterList(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, c := range clusters {
			if sel.Matches(c.Labels) {
				matching = append(matching, c)
				if p.Limit > 0 && len(matching) == p.Limit {
					return matching, nil
				}
			}
		}
		if p.Limit <= 0 || len(clusters) < p.Limit {
			return matching, nil
		}
		last := &clusters[len(clusters)-1]
		p.After = &ClusterCursor{Name: last.Name, ID: last.ID}
	}
}

// UpdateCluster replaces a cluster's spec if its version is still version
// (compare-and-swap). When someone else changed it first, the CodeConflict
// error names the current version; nothing is overwritten.
func (r *Registry) UpdateCluster(ctx context.Context, id string, version int64, spec ClusterSpec) (*Cluster, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	if err := checkOrgScope(ctx, &spec); err != nil {
		return nil, err
	}
	if err := spec.Normalize(); err != nil {
		return nil, err
	}
	if err := r.canSeal(&spec); err != nil {
		return nil, err
	}
	c, err := r.GetCluster(ctx, id)
	if err != nil {
		return nil, err
	}
	defer r.cache.evictCluster(c.ID)
	return r.store.ClusterUpdate(ctx, ClusterUpdateParams{
		ID: c.ID, Version: version, Spec: spec, Now: r.Now(),
		Audit: r.auditEntry(ctx, AuditClusterUpdate, c.ID, "cluster", c.ID, describeSpecChange(&c.ClusterSpec, &spec)),
	})
}

// ModifyCluster applies edit to the current spec and writes it with
// compare-and-swap, re-reading and re-applying the edit when a concurrent
// change wins (up to a few times). Use it for edits that are meaningful on any
// version ("add this namespace"); use UpdateCluster for whole-spec edits made
// from a version a person looked at.
func (r *Registry) ModifyCluster(ctx context.Context, idOrName string, edit func(*ClusterSpec) error) (*Cluster, error) {
	const attempts = 5
	var err error
	for range attempts {
		var c *Cluster
		if c, err = r.GetCluster(ctx, idOrName); err != nil {
			return nil, err
		}
		spec := c.ClusterSpec
		spec.AllowedNamespaces = append([]string(nil), spec.AllowedNamespaces...)
		spec.AllowedCatalogEntries = append([]string(nil), spec.AllowedCatalogEntries...)
		spec.AllowedOperationTemplates = append([]string(nil), spec.AllowedOperationTemplates...)
		spec.Policy.RequiredCapabilities = append([]string(nil), spec.Policy.RequiredCapabilities...)
		if err := edit(&spec); err != nil {
			return nil, err
		}
		var updated *Cluster
		updated, err = r.UpdateCluster(ctx, c.ID, c.Version, spec)
		if ErrorCode(err) != CodeConflict {
			return updated, err
		}
		// Retry only a lost compare-and-swap: a conflict at an unchanged
		// version is another rule (a taken name) that retrying cannot fix.
		if now, gerr := r.GetCluster(ctx, c.ID); gerr != nil || now.Version == c.Version {
			return nil, err
		}
	}
	return nil, err
}

// SetClusterEnabled disables or enables a cluster. A disabled cluster's agent
// gets 403 cluster_disabled on every call; enabling returns it to Active (or
// Pending if it never registered).
func (r *Registry) SetClusterEnabled(ctx context.Context, idOrName string, enabled bool, reason string) (*Cluster, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	c, err := r.GetCluster(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	action := AuditClusterDisable
	if enabled {
		action = AuditClusterEnable
	}
	defer r.cache.evictCluster(c.ID)
	return r.store.ClusterSetEnabled(ctx, ClusterSetEnabledParams{
		ID: c.ID, Enabled: enabled, Now: r.Now(),
		Audit: r.auditEntry(ctx, action, c.ID, "cluster", c.ID, reason),
	})
}

// Audit actions of queue pauses.
const (
	AuditClusterPause  = "cluster.pause"
	AuditClusterResume = "cluster.resume"
)

// SetClusterPaused pauses a cluster's queue (its agent's polls get no job,
// while it stays registered and heartbeating and submissions still queue)
// or resumes it. Operators may: it is the queue, not the cluster's record.
func (r *Registry) SetClusterPaused(ctx context.Context, idOrName string, paused bool, reason string) (*Cluster, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	c, err := r.GetCluster(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	if c.Paused() == paused {
		state := "running"
		if paused {
			state = "paused"
		}
		return nil, Errorf(CodeConflict, "cluster %s's queue is already %s", c.Name, state)
	}
	action := AuditClusterResume
	if paused {
		action = AuditClusterPause
	}
	defer r.cache.evictCluster(c.ID)
	return r.store.ClusterSetPaused(ctx, ClusterSetPausedParams{
		ID: c.ID, Paused: paused, Now: r.Now(), Reason: reason,
		Audit: r.auditEntry(ctx, action, c.ID, "cluster", c.ID, reason),
	})
}

// DeleteCluster deletes a cluster and everything it owns.
func (r *Registry) DeleteCluster(ctx context.Context, idOrName, reason string) (*Cluster, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	c, err := r.GetCluster(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = fmt.Sprintf("deleted cluster %q", c.Name)
	}
	defer r.cache.evictCluster(c.ID)
	err = r.store.ClusterDelete(ctx, ClusterDeleteParams{
		ID:    c.ID,
		Audit: r.auditEntry(ctx, AuditClusterDelete, c.ID, "cluster", c.ID, reason),
	})
	return c, err
}

// IssueToken issues a new one-time registration token for a cluster (valid
// for ttl, or the default when zero), voiding its older unused ones. The
// secret is in the result and nowhere else.
func (r *Registry) IssueToken(ctx context.Context, clusterIDOrName string, ttl time.Duration) (*IssuedToken, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return nil, err
	}
	issued, err := r.newToken(c.ID, ttl, r.Now(), ActorFrom(ctx).String())
	if err != nil {
		return nil, err
	}
	err = r.store.TokenCreate(ctx, TokenCreateParams{
		Token: issued.Token,
		Audit: r.auditEntry(ctx, AuditTokenIssue, c.ID, "token", issued.Token.ID, "older unused tokens are void"),
	})
	if err != nil {
		return nil, err
	}
	return issued, nil
}

func (r *Registry) newToken(clusterID string, ttl time.Duration, now time.Time, by string) (*IssuedToken, error) {
	if ttl == 0 {
		ttl = r.cfg.TokenTTL
	}
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return nil, Errorf(CodeInvalid, "token lifetime %s must be between %s and %s", ttl, MinTokenTTL, "168h (7 days)")
	}
	id := newTokenID()
	secret := newBearer(registrationTokenPrefix, id)
	return &IssuedToken{
		Token: RegistrationToken{
			ID: id, ClusterID: clusterID, CreatedAt: now, ExpiresAt: now.Add(ttl),
			CreatedBy: by, Hash: hashSecret(secret.Reveal()),
		},
		Secret: secret,
	}, nil
}

// ListTokens returns a cluster's registration tokens (all clusters' when
// clusterIDOrName is empty), newest first.
func (r *Registry) ListTokens(ctx context.Context, clusterIDOrName string) ([]RegistrationToken, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	if clusterIDOrName == "" {
		all, err := r.store.TokenList(ctx, "")
		if err != nil || orgScope(ctx) == "" {
			return all, err
		}
		visible, _, err := r.scopedClusterIDs(ctx, nil)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(all, func(t RegistrationToken) bool { return !slices.Contains(visible, t.ClusterID) }), nil
	}
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return nil, err
	}
	return r.store.TokenList(ctx, c.ID)
}

// RevokeToken revokes an unused registration token.
func (r *Registry) RevokeToken(ctx context.Context, tokenID, reason string) (*RegistrationToken, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	tokenID = strings.TrimSpace(tokenID)
	if id, ok := parseBearer(registrationTokenPrefix, "rt-", tokenID); ok {
		tokenID = id // accept the token itself; only its public id is used
	}
	t, err := r.store.TokenGet(ctx, tokenID)
	if err == nil {
		if _, err = r.GetCluster(ctx, t.ClusterID); ErrorCode(err) == CodeNotFound {
			err = Errorf(CodeNotFound, "token of a cluster out of scope") // answered as missing, below
		}
	}
	if ErrorCode(err) == CodeNotFound {
		return nil, Errorf(CodeNotFound, "no registration token has the id %q (tether token list shows them)", tokenID)
	}
	if err != nil {
		return nil, err
	}
	return r.store.TokenRevoke(ctx, TokenRevokeParams{
		ID: t.ID, Now: r.Now(),
		Audit: r.auditEntry(ctx, AuditTokenRevoke, t.ClusterID, "token", t.ID, reason),
	})
}
