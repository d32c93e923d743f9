package registry

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Queue health: how each cluster's queue is doing, for the overview, the
// clusters list, a cluster's detail, the CLI and the admin API.
const (
	// HealthWindow is how far back the failure rate and the queue wait
	// look.
	HealthWindow = time.Hour
	// HealthWaitSamples bounds the claims the queue wait's median is taken
	// over: the most recent ones.
	HealthWaitSamples = 100
	// NotDrainingAfter is how long a queue may hold jobs with none in
	// flight and no claim before it counts as not draining: long enough
	// that a job submitted a moment ago, before the agent's next poll,
	// does not raise the flag.
	NotDrainingAfter = 2 * time.Minute
)

// QueueHealth is one cluster's queue as measured at At.
//
// The failure rate and the queue wait are read through the index of a
// cluster's jobs by state and submit time, which the job writes keep anyway:
// so "the last hour" is the jobs submitted in the last hour (a job that
// waited longer and ended within it is not counted), and the wait is that of
// the most recently submitted claimed jobs (in a first-in first-out queue,
// the most recent claims) claimed within the hour. An index on finish or
// claim time would make both exact, at the price of one more index write on
// every claim or result.
type QueueHealth struct {
	ClusterID string    `json:"clusterId"`
	At        time.Time `json:"at"`
	// Queued and InFlight (in progress) are the job counts now.
	Queued   int64 `json:"queued"`
	InFlight int64 `json:"inFlight"`
	// OldestQueuedAt is the submit time of the oldest queued job (zero
	// with an empty queue).
	OldestQueuedAt time.Time `json:"oldestQueuedAt,omitzero"`
	// WaitP50 is the median time from submit to claim over WaitSamples
	// claims (none: unknown).
	WaitP50     time.Duration `json:"-"`
	WaitSamples int           `json:"waitSamples"`
	// LastClaimAt is the newest claim seen (zero: none in the samples).
	LastClaimAt time.Time `json:"lastClaimAt,omitzero"`
	// Finished counts jobs submitted in the last HealthWindow that have
	// ended, canceled ones aside (an admin's decision, not an outcome of the
	// work); Failed those of them that failed or expired unclaimed.
	Finished int64 `json:"finished"`
	Failed   int64 `json:"failed"`
	// NotDraining: jobs wait, none is in flight and none was claimed for
	// NotDrainingAfter, while the agent heartbeats and the queue is not
	// paused: the agent is alive but not taking work. Reason says so in
	// words.
	NotDraining bool   `json:"notDraining"`
	Reason      string `json:"reason,omitempty"`
}

// OldestQueuedAge is how long the oldest queued job has waited (0 when
// nothing is queued).
func (h *QueueHealth) OldestQueuedAge() time.Duration {
	if h.OldestQueuedAt.IsZero() {
		return 0
	}
	return max(h.At.Sub(h.OldestQueuedAt), 0)
}

// FailureRate is Failed / Finished; ok is false when nothing finished.
func (h *QueueHealth) FailureRate() (rate float64, ok bool) {
	if h.Finished == 0 {
		return 0, false
	}
	return float64(h.Failed) / float64(h.Finished), true
}

// queueHealthJSON adds the derived figures, in seconds and as a fraction, to
// the JSON form; null when unknown.
type queueHealthJSON struct {
	queueHealthFields
	OldestQueuedSeconds *float64 `json:"oldestQueuedSeconds"`
	WaitP50Seconds      *float64 `json:"waitP50Seconds"`
	FailureRate         *float64 `json:"failureRate"`
}

type queueHealthFields QueueHealth

func (h QueueHealth) MarshalJSON() ([]byte, error) {
	out := queueHealthJSON{queueHealthFields: queueHealthFields(h)}
	if !h.OldestQueuedAt.IsZero() {
		s := h.OldestQueuedAge().Seconds()
		out.OldestQueuedSeconds = &s
	}
	if h.WaitSamples > 0 {
		s := h.WaitP50.Seconds()
		out.WaitP50Seconds = &s
	}
	if r, ok := h.FailureRate(); ok {
		out.FailureRate = &r
	}
	return json.Marshal(out)
}

func (h *QueueHealth) UnmarshalJSON(b []byte) error {
	var in queueHealthJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*h = QueueHealth(in.queueHealthFields)
	if in.WaitP50Seconds != nil {
		h.WaitP50 = time.Duration(*in.WaitP50Seconds * float64(time.Second)).Round(time.Millisecond)
	}
	return nil
}

// assessQueue turns a cluster's figures into its queue health at now.
func assessQueue(c *Cluster, counts map[JobState]int64, s JobQueueStats, now time.Time) QueueHealth {
	h := QueueHealth{
		ClusterID: c.ID, At: now, Queued: counts[JobQueued], InFlight: counts[JobInProgress],
		OldestQueuedAt: s.OldestQueuedAt,
	}
	for st, n := range s.Ended {
		if st == JobCanceled {
			continue
		}
		h.Finished += n
		if st == JobFailed || st == JobExpired {
			h.Failed += n
		}
	}
	since := now.Add(-HealthWindow)
	var waits []time.Duration
	for _, cl := range s.Claims {
		if cl.ClaimedAt.After(h.LastClaimAt) {
			h.LastClaimAt = cl.ClaimedAt
		}
		if !cl.ClaimedAt.Before(since) {
			waits = append(waits, max(cl.ClaimedAt.Sub(cl.CreatedAt), 0))
		}
	}
	h.WaitSamples = len(waits)
	h.WaitP50 = median(waits)
	h.NotDraining = notDraining(c, &h, now)
	if h.NotDraining {
		h.Reason = "the agent heartbeats but takes no work: jobs wait, none is in flight, none was claimed for " +
			NotDrainingAfter.String() + ", and the queue is not paused"
	}
	return h
}

// notDraining is the rule of QueueHealth.NotDraining. Only a cluster whose
// verdict short of its queue is active can be flagged: a disabled, pending,
// silent or paused one already has its own word (Cluster.Health), and none
// is expected to drain.
func notDraining(c *Cluster, h *QueueHealth, now time.Time) bool {
	if c.Health(now, nil) != HealthActive {
		return false
	}
	if h.Queued == 0 || h.InFlight > 0 || h.OldestQueuedAt.IsZero() || h.OldestQueuedAge() < NotDrainingAfter {
		return false
	}
	return h.LastClaimAt.IsZero() || now.Sub(h.LastClaimAt) >= NotDrainingAfter
}

// median of ds (0 for none); the mean of the middle two for an even count.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	m := len(ds) / 2
	if len(ds)%2 == 1 {
		return ds[m]
	}
	return (ds[m-1] + ds[m]) / 2
}

// QueueHealth returns the queue health of one cluster, by id or name.
func (r *Registry) QueueHealth(ctx context.Context, idOrName string) (*QueueHealth, error) {
	c, err := r.GetCluster(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	all, err := r.queueHealth(ctx, []Cluster{*c})
	if err != nil {
		return nil, err
	}
	return &all[0], nil
}

// FleetQueueHealth returns the queue health of every cluster the actor may
// see, in name order.
func (r *Registry) FleetQueueHealth(ctx context.Context) ([]QueueHealth, error) {
	clusters, err := r.ListClusters(ctx, ClusterListParams{})
	if err != nil {
		return nil, err
	}
	if len(clusters) == 0 {
		return []QueueHealth{}, nil
	}
	return r.queueHealth(ctx, clusters)
}

// QueueHealthOf is FleetQueueHealth for clusters the caller listed already
// (the metrics collector does, for their other series), in their order;
// clusters the actor may not see are left out.
func (r *Registry) QueueHealthOf(ctx context.Context, clusters []Cluster) ([]QueueHealth, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	visible := make([]Cluster, 0, len(clusters))
	for i := range clusters {
		if inScope(ctx, &clusters[i]) {
			visible = append(visible, clusters[i])
		}
	}
	return r.queueHealth(ctx, visible)
}

func (r *Registry) queueHealth(ctx context.Context, clusters []Cluster) ([]QueueHealth, error) {
	now := r.Now()
	counts, err := r.store.JobCounts(ctx)
	if err != nil {
		return nil, err
	}
	byCluster := map[string]map[JobState]int64{}
	for _, n := range counts {
		if byCluster[n.ClusterID] == nil {
			byCluster[n.ClusterID] = map[JobState]int64{}
		}
		byCluster[n.ClusterID][n.State] = n.Count
	}
	// A cluster without a job has nothing to read: the counters (free to
	// read) say so, and a fleet of mostly idle clusters costs a query per
	// busy one only.
	var ids []string
	for i := range clusters {
		if len(byCluster[clusters[i].ID]) > 0 {
			ids = append(ids, clusters[i].ID)
		}
	}
	statsOf := map[string]JobQueueStats{}
	if len(ids) > 0 {
		stats, err := r.store.JobQueueStats(ctx, JobQueueStatsParams{
			ClusterIDs: ids, SubmittedAfter: now.Add(-HealthWindow), Claims: HealthWaitSamples,
		})
		if err != nil {
			return nil, err
		}
		for _, s := range stats {
			statsOf[s.ClusterID] = s
		}
	}
	out := make([]QueueHealth, len(clusters))
	for i := range clusters {
		out[i] = assessQueue(&clusters[i], byCluster[clusters[i].ID], statsOf[clusters[i].ID], now)
	}
	return out, nil
}
