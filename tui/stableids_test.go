package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// stableIDs is a Backend for golden tests: it shows the console readable
// stand-ins, named after what they identify and as long as the real ones,
// instead of the registry's random ids (ULIDs, claim ids), and translates
// them back on the way in. The console then renders the same frame on every
// run, whatever overlaps what.
type stableIDs struct {
	// Service answers what the console never calls, untranslated.
	admin.Service
	inner *Local
	mu    sync.Mutex
	fake  map[string]string // real -> stand-in
	real  map[string]string // stand-in -> real
}

var realID = regexp.MustCompile(`\b(?:cl|j|cr|rt|ro)-[0-9a-z]{26}\b|\bfc-[a-z2-7]{20}\b`)

func newStableIDs(inner *Local) *stableIDs {
	return &stableIDs{Service: inner, inner: inner, fake: map[string]string{}, real: map[string]string{}}
}

func standIn(prefix, name string, n int) string {
	name = strings.NewReplacer("_", "", ".", "").Replace(strings.ToLower(name))
	return prefix + (name + strings.Repeat("0", n))[:n]
}

// learn names every record the registry holds.
func (s *stableIDs) learn() {
	ctx := context.Background()
	r := s.inner.Reg
	add := func(real, fake string) {
		s.fake[real] = fake
		s.real[fake] = real
	}
	for _, c := range must(r.ListClusters(ctx, registry.ClusterListParams{})) {
		add(c.ID, standIn("cl-", c.Name+"-", 26))
		creds := must(r.ListCredentials(ctx, c.ID))
		for i, cr := range creds {
			add(cr.ID, standIn("cr-", fmt.Sprintf("%s-%d-", c.Name, len(creds)-i), 26))
		}
		toks := must(r.ListTokens(ctx, c.ID))
		for i, t := range toks {
			add(t.ID, standIn("rt-", fmt.Sprintf("%s-%d-", c.Name, len(toks)-i), 26))
		}
	}
	for _, ro := range must(r.ListRollouts(ctx, registry.RolloutListParams{})) {
		add(ro.ID, standIn("ro-", ro.Name+"-", 26))
	}
	for _, j := range must(r.ListJobs(ctx, registry.JobListParams{Limit: 10000})) {
		add(j.ID, standIn("j-", j.Target.Name+"-", 26))
		if j.ClaimID != "" {
			add(j.ClaimID, standIn("fc-", j.Target.Name+"-", 20))
		}
	}
}

// out replaces real ids in a text.
func (s *stableIDs) out(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range realID.FindAllString(text, -1) {
		if _, ok := s.fake[id]; !ok {
			s.learn()
			break
		}
	}
	return realID.ReplaceAllStringFunc(text, func(id string) string {
		if f, ok := s.fake[id]; ok {
			return f
		}
		return id
	})
}

// in maps a stand-in back to the real id.
func (s *stableIDs) in(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.real[id]; ok {
		return r
	}
	return id
}

// outv rewrites every id in a value, through its JSON form.
func outv[T any](s *stableIDs, v T) T {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var res T
	if err := json.Unmarshal([]byte(s.out(string(data))), &res); err != nil {
		panic(err)
	}
	return res
}

func (s *stableIDs) err(err error) error {
	if err == nil {
		return nil
	}
	var e *registry.Error
	if errors.As(err, &e) {
		return &registry.Error{Code: e.Code, Message: s.out(e.Message)}
	}
	return err
}

func (s *stableIDs) Now() time.Time { return s.inner.Now() }

func (s *stableIDs) RotationGrace() time.Duration { return s.inner.RotationGrace() }

func (s *stableIDs) Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error) {
	ch, err := s.inner.Watch(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make(chan registry.WatchEvent, 64)
	go func() {
		defer close(out)
		for ev := range ch {
			ev.ID, ev.ClusterID = s.out(ev.ID), s.out(ev.ClusterID)
			if ev.Cluster != nil {
				ev.Cluster = ptr(outv(s, *ev.Cluster))
			}
			if ev.Job != nil {
				ev.Job = ptr(outv(s, *ev.Job))
			}
			if ev.Event != nil {
				ev.Event = ptr(outv(s, *ev.Event))
			}
			if ev.Audit != nil {
				ev.Audit = ptr(outv(s, *ev.Audit))
			}
			if ev.Token != nil {
				ev.Token = ptr(outv(s, *ev.Token))
			}
			if ev.Rollout != nil {
				ev.Rollout = ptr(outv(s, *ev.Rollout))
			}
			if ev.Credential != nil {
				ev.Credential = ptr(outv(s, *ev.Credential))
				stableCert(ev.Credential.ClientCertificate)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func (s *stableIDs) LatestSeq(ctx context.Context) (int64, error) { return s.inner.LatestSeq(ctx) }

func (s *stableIDs) ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	v, err := s.inner.ListClusters(ctx, p)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) GetCluster(ctx context.Context, id string) (*registry.Cluster, error) {
	v, err := s.inner.GetCluster(ctx, s.in(id))
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) CreateCluster(ctx context.Context, spec registry.ClusterSpec, ttl time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	c, tok, err := s.inner.CreateCluster(ctx, spec, ttl)
	if err != nil {
		return nil, nil, s.err(err)
	}
	secret := "tether_reg_" + strings.Repeat("0", 26) + "_" + strings.Repeat("a", 32)
	return ptr(outv(s, *c)), &registry.IssuedToken{Token: outv(s, tok.Token), Secret: registry.Secret(secret)}, nil
}

func (s *stableIDs) UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error) {
	v, err := s.inner.UpdateCluster(ctx, s.in(id), version, spec)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) SetClusterEnabled(ctx context.Context, id string, enabled bool, reason string) (*registry.Cluster, error) {
	v, err := s.inner.SetClusterEnabled(ctx, s.in(id), enabled, reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) DeleteCluster(ctx context.Context, id, reason string) (*registry.Cluster, error) {
	v, err := s.inner.DeleteCluster(ctx, s.in(id), reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) IssueToken(ctx context.Context, clusterID string, ttl time.Duration) (*registry.IssuedToken, error) {
	tok, err := s.inner.IssueToken(ctx, s.in(clusterID), ttl)
	if err != nil {
		return nil, s.err(err)
	}
	return &registry.IssuedToken{Token: outv(s, tok.Token), Secret: tok.Secret}, nil
}

func (s *stableIDs) ListTokens(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error) {
	v, err := s.inner.ListTokens(ctx, s.in(clusterID))
	return outv(s, v), s.err(err)
}

func (s *stableIDs) ListCredentials(ctx context.Context, clusterID string) ([]registry.Credential, error) {
	v, err := s.inner.ListCredentials(ctx, s.in(clusterID))
	v = outv(s, v)
	for i := range v {
		stableCert(v[i].ClientCertificate)
	}
	return v, s.err(err)
}

func (s *stableIDs) ForceRotation(ctx context.Context, clusterID, reason string) (registry.ForcedRotation, error) {
	f, err := s.inner.ForceRotation(ctx, s.in(clusterID), reason)
	return f, s.err(err)
}

func (s *stableIDs) RevokeCredentials(ctx context.Context, clusterID, reason string) (int, error) {
	n, err := s.inner.RevokeCredentials(ctx, s.in(clusterID), reason)
	return n, s.err(err)
}

func (s *stableIDs) params(p registry.JobListParams) registry.JobListParams {
	ids := make([]string, len(p.ClusterIDs))
	for i, id := range p.ClusterIDs {
		ids[i] = s.in(id)
	}
	p.ClusterIDs = ids
	return p
}

func (s *stableIDs) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	v, err := s.inner.ListJobs(ctx, s.params(p))
	return outv(s, v), s.err(err)
}

func (s *stableIDs) CountJobs(ctx context.Context, p registry.JobListParams) (int, error) {
	n, err := s.inner.CountJobs(ctx, s.params(p))
	return n, s.err(err)
}

func (s *stableIDs) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	v, err := s.inner.JobCounts(ctx)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	v, err := s.inner.FleetQueueHealth(ctx)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) ShowJobPayload(ctx context.Context, id string) (*registry.Job, error) {
	v, err := s.inner.ShowJobPayload(ctx, s.in(id))
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	v, err := s.inner.GetJob(ctx, s.in(id))
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error) {
	v, err := s.inner.JobHistory(ctx, s.in(id))
	return outv(s, v), s.err(err)
}

func (s *stableIDs) RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	v, err := s.inner.RequeueJob(ctx, s.in(id), reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error) {
	v, err := s.inner.RequeueJobWith(ctx, s.in(id), o)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) CancelJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	v, err := s.inner.CancelJob(ctx, s.in(id), reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	v, err := s.inner.DeleteJob(ctx, s.in(id), reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) SubmitJob(ctx context.Context, sub registry.JobSubmission) (*registry.Job, bool, error) {
	sub.ClusterID = s.in(sub.ClusterID)
	v, created, err := s.inner.SubmitJob(ctx, sub)
	if err != nil {
		return nil, false, s.err(err)
	}
	return ptr(outv(s, *v)), created, nil
}

func (s *stableIDs) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	v, err := s.inner.RetryJob(ctx, s.in(id), reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error) {
	v, err := s.inner.ExtendLease(ctx, s.in(id), by)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	p.ClusterID = s.in(p.ClusterID)
	v, err := s.inner.ListEvents(ctx, p)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	p.ClusterID = s.in(p.ClusterID)
	v, err := s.inner.ListAudit(ctx, p)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	v, err := s.inner.ListRollouts(ctx, p)
	return outv(s, v), s.err(err)
}

func (s *stableIDs) GetRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	v, err := s.inner.GetRollout(ctx, s.in(id))
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) rolloutAction(ctx context.Context, id, action, reason string) (*registry.Rollout, error) {
	v, err := admin.RolloutAction(ctx, s.inner, s.in(id), action, reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}

func (s *stableIDs) PauseRollout(ctx context.Context, id, reason string) (*registry.Rollout, error) {
	return s.rolloutAction(ctx, id, "pause", reason)
}

func (s *stableIDs) ResumeRollout(ctx context.Context, id, reason string) (*registry.Rollout, error) {
	return s.rolloutAction(ctx, id, "resume", reason)
}

func (s *stableIDs) AbortRollout(ctx context.Context, id, reason string) (*registry.Rollout, error) {
	return s.rolloutAction(ctx, id, "abort", reason)
}

func (s *stableIDs) RetryFailedRollout(ctx context.Context, id, reason string) (*registry.Rollout, error) {
	return s.rolloutAction(ctx, id, "retry-failed", reason)
}

func (s *stableIDs) SetClusterPaused(ctx context.Context, id string, paused bool, reason string) (*registry.Cluster, error) {
	v, err := s.inner.SetClusterPaused(ctx, s.in(id), paused, reason)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(outv(s, *v)), nil
}
