package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The admin API's resources, as this client sees them. Fields the server
// adds later are ignored; see the admin API's documentation for each.

// Policy is how tether treats a cluster's jobs and agents.
type Policy struct {
	LeaseSeconds         int      `json:"leaseSeconds"`
	MaxAttempts          int      `json:"maxAttempts"`
	RequiredCapabilities []string `json:"requiredCapabilities"`
}

// ClusterSpec is the part of a cluster an admin writes.
type ClusterSpec struct {
	Name                      string            `json:"name"`
	Organization              string            `json:"organization,omitempty"`
	Labels                    map[string]string `json:"labels,omitempty"`
	AllowedNamespaces         []string          `json:"allowedNamespaces,omitempty"`
	AllowedCatalogEntries     []string          `json:"allowedCatalogEntries,omitempty"`
	AllowedOperationTemplates []string          `json:"allowedOperationTemplates,omitempty"`
	Mode                      string            `json:"mode,omitempty"`
	Policy                    *Policy           `json:"policy,omitempty"`
}

// Cluster is a cluster's record and observed status.
type Cluster struct {
	ID                        string            `json:"id"`
	Name                      string            `json:"name"`
	Organization              string            `json:"organization"`
	Labels                    map[string]string `json:"labels"`
	AllowedNamespaces         []string          `json:"allowedNamespaces"`
	AllowedCatalogEntries     []string          `json:"allowedCatalogEntries"`
	AllowedOperationTemplates []string          `json:"allowedOperationTemplates"`
	Mode                      string            `json:"mode"`
	Policy                    Policy            `json:"policy"`
	State                     string            `json:"state"`
	Version                   int64             `json:"version"`
	CreatedAt                 time.Time         `json:"createdAt"`
	UpdatedAt                 time.Time         `json:"updatedAt"`
	RegisteredAt              time.Time         `json:"registeredAt"`
	Status                    struct {
		LastHeartbeatAt time.Time `json:"lastHeartbeatAt"`
		Capabilities    []string  `json:"capabilities"`
	} `json:"status"`
}

// RegistrationToken is a one-time token, shown when it is issued.
type RegistrationToken struct {
	ID        string    `json:"id"`
	ClusterID string    `json:"clusterId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ClusterQuery filters ListClusters.
type ClusterQuery struct {
	State    string // pending, active, disabled
	Org      string
	Selector string // a label selector: env=prod,region in (eu,us)
	Limit    int
	Cursor   string
}

// ListClusters returns a page of clusters, by name.
func (c *Client) ListClusters(ctx context.Context, q ClusterQuery) (*Page[Cluster], error) {
	v := pageQuery(q.Limit, q.Cursor)
	setIf(v, "state", q.State)
	setIf(v, "org", q.Org)
	setIf(v, "selector", q.Selector)
	var out Page[Cluster]
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/clusters", query: v, out: &out})
}

// GetCluster returns a cluster by id or name.
func (c *Client) GetCluster(ctx context.Context, cluster string) (*Cluster, error) {
	var out Cluster
	return &out, c.do(ctx, request{method: http.MethodGet, path: path("clusters", cluster), out: &out})
}

// CreateCluster creates a cluster and returns it with its first
// registration token (tokenTTL zero: the server's default).
func (c *Client) CreateCluster(ctx context.Context, spec ClusterSpec, tokenTTL time.Duration) (*Cluster, *RegistrationToken, error) {
	body := struct {
		ClusterSpec
		TTL string `json:"registrationTokenTtl,omitempty"`
	}{ClusterSpec: spec}
	if tokenTTL > 0 {
		body.TTL = tokenTTL.String()
	}
	var out struct {
		Cluster           Cluster           `json:"cluster"`
		RegistrationToken RegistrationToken `json:"registrationToken"`
	}
	if err := c.do(ctx, request{method: http.MethodPost, path: "/clusters", body: body, out: &out}); err != nil {
		return nil, nil, err
	}
	return &out.Cluster, &out.RegistrationToken, nil
}

// UpdateCluster merges patch (a JSON object of spec fields: name,
// allowedNamespaces, labels, policy, ...) into the cluster if it is still at
// version; a concurrent change is an *Error with code "conflict".
func (c *Client) UpdateCluster(ctx context.Context, cluster string, version int64, patch map[string]any) (*Cluster, error) {
	var out Cluster
	h := http.Header{}
	h.Set("If-Match", `"`+strconv.FormatInt(version, 10)+`"`)
	return &out, c.do(ctx, request{method: http.MethodPatch, path: path("clusters", cluster), body: patch, header: h, out: &out})
}

// SetClusterEnabled disables or enables a cluster.
func (c *Client) SetClusterEnabled(ctx context.Context, cluster string, enabled bool, why string) (*Cluster, error) {
	action := "disable"
	if enabled {
		action = "enable"
	}
	var out Cluster
	return &out, c.do(ctx, request{method: http.MethodPost, path: path("clusters", cluster, action), body: reason(why), out: &out})
}

// DeleteCluster deletes a cluster and everything it owns.
func (c *Client) DeleteCluster(ctx context.Context, cluster, why string) error {
	q := url.Values{}
	setIf(q, "reason", why)
	return c.do(ctx, request{method: http.MethodDelete, path: path("clusters", cluster), query: q})
}

// IssueToken issues a new registration token (ttl zero: the default).
func (c *Client) IssueToken(ctx context.Context, cluster string, ttl time.Duration) (*RegistrationToken, error) {
	body := map[string]string{}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var out RegistrationToken
	return &out, c.do(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "registration-tokens"), body: body, out: &out})
}

// RevokeToken revokes an unused registration token by its id (rt-...);
// one already used or revoked is an *Error with code "conflict".
func (c *Client) RevokeToken(ctx context.Context, tokenID, why string) error {
	return c.do(ctx, request{method: http.MethodPost, path: path("registration-tokens", tokenID, "revoke"), body: reason(why)})
}

// SigningKey is a cluster's new payload-signing key, as a JSON Web Key.
type SigningKey struct {
	ClusterID string    `json:"clusterId"`
	CreatedAt time.Time `json:"createdAt"`
	// OverlapUntil is when the previous key leaves the cluster's key set.
	OverlapUntil time.Time `json:"overlapUntil"`
	Key          struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Alg string `json:"alg,omitempty"`
		Use string `json:"use,omitempty"`
		// EndorsedBy and Endorsement: the key this one replaced, and its
		// signature introducing this one (key continuity).
		EndorsedBy  string `json:"endorsedBy,omitempty"`
		Endorsement string `json:"endorsement,omitempty"`
	} `json:"key"`
}

// RotateSigningKey gives the cluster a new payload-signing key; the previous
// one keeps verifying for overlap (zero: the server's default).
func (c *Client) RotateSigningKey(ctx context.Context, cluster string, overlap time.Duration) (*SigningKey, error) {
	body := map[string]string{}
	if overlap > 0 {
		body["overlap"] = overlap.String()
	}
	var out SigningKey
	return &out, c.do(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "signing-keys", "rotate"), body: body, out: &out})
}

// Job is a job as the admin API shows it.
type Job struct {
	ID             string          `json:"id"`
	ClusterID      string          `json:"clusterId"`
	Kind           string          `json:"kind"`
	Intent         string          `json:"intent"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotencyKey"`
	State          string          `json:"state"`
	Attempt        int             `json:"attempt"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	ExpiresAt      time.Time       `json:"expiresAt"`
	SubmittedBy    string          `json:"submittedBy"`
	RetryOf        string          `json:"retryOf"` // the job this one retries (RetryJob)
	ClaimID        string          `json:"claimId"`
	LeaseExpiresAt time.Time       `json:"leaseExpiresAt"`
	Phase          string          `json:"phase"`
	Outcome        string          `json:"outcome"`
	Error          string          `json:"error"`
	Result         json.RawMessage `json:"result"`
	FinishedAt     time.Time       `json:"finishedAt"`
	Target         struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"target"`
	// RetriedBy names the jobs retried from this one, oldest first
	// (GetJob only): a job retried already need not be retried again.
	RetriedBy []string `json:"retriedBy"`
	// Timeline is the job's history (GetJob only).
	Timeline []struct {
		At      time.Time `json:"at"`
		Type    string    `json:"type"`
		Actor   string    `json:"actor"`
		State   string    `json:"state"`
		Message string    `json:"message"`
	} `json:"timeline"`
	// Replayed is set by SubmitJob when the idempotency key answered a job
	// of the cluster already (open, or submitted with the key within the
	// server's key retention, 24 h by default, whatever its state), and
	// that job is the answer. The same key with another kind or payload is
	// an *Error with code conflict.
	Replayed bool `json:"-"`
}

// Terminal reports whether the job has ended.
func (j *Job) Terminal() bool { return j.State != "queued" && j.State != "in_progress" }

// Succeeded reports whether the job ended well (succeeded, or a no-op).
func (j *Job) Succeeded() bool { return j.State == "succeeded" || j.State == "noop" }

// Submission is a job to submit.
type Submission struct {
	Cluster        string          `json:"cluster"` // id or name
	Kind           string          `json:"kind"`    // apply, delete or intent
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	ExpiresIn      string          `json:"expiresIn,omitempty"` // e.g. "1h"
}

// SubmitJob queues a job. With wait > 0 (at most 5 minutes) it returns once
// the job has ended, or as it stands when wait passes (check Terminal). A
// policy refusal is an *Error with the rule as its code
// (namespace_not_allowed, catalog_entry_not_allowed,
// operation_template_not_allowed).
func (c *Client) SubmitJob(ctx context.Context, s Submission, wait time.Duration) (*Job, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", seconds(wait))
	}
	var out Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/jobs", query: q, body: s, out: &out,
		replied: func(r *http.Response) { out.Replayed = r.Header.Get("Idempotent-Replayed") == "true" }})
	return &out, err
}

// GetJob returns a job with its timeline; with wait > 0 it blocks as
// SubmitJob does.
func (c *Client) GetJob(ctx context.Context, id string, wait time.Duration) (*Job, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", seconds(wait))
	}
	var out Job
	return &out, c.do(ctx, request{method: http.MethodGet, path: path("jobs", id), query: q, out: &out})
}

// JobQuery filters ListJobs.
type JobQuery struct {
	Clusters []string // ids or names
	States   []string
	Kind     string
	Search   string
	Stuck    bool
	Limit    int
	Cursor   string
}

// ListJobs returns a page of jobs, newest first.
func (c *Client) ListJobs(ctx context.Context, q JobQuery) (*Page[Job], error) {
	v := pageQuery(q.Limit, q.Cursor)
	for _, cl := range q.Clusters {
		v.Add("cluster", cl)
	}
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	setIf(v, "kind", q.Kind)
	setIf(v, "search", q.Search)
	if q.Stuck {
		v.Set("stuck", "true")
	}
	var out Page[Job]
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/jobs", query: v, out: &out})
}

// RequeueJob, CancelJob: the job actions, with a reason for the audit trail.
func (c *Client) RequeueJob(ctx context.Context, id, why string) (*Job, error) {
	return c.jobAction(ctx, id, "requeue", reason(why))
}

func (c *Client) CancelJob(ctx context.Context, id, why string) (*Job, error) {
	return c.jobAction(ctx, id, "cancel", reason(why))
}

// RetryJob submits a failed, conflicting, expired or canceled job again as
// a new job (its RetryOf names the original), and returns the new job.
func (c *Client) RetryJob(ctx context.Context, id, why string) (*Job, error) {
	return c.jobAction(ctx, id, "retry", reason(why))
}

// DeleteJob deletes a finished job with its timeline and returns it as it
// was; a queued or in-progress one is refused with job_not_finished (cancel
// it first).
func (c *Client) DeleteJob(ctx context.Context, id, why string) (*Job, error) {
	var out Job
	return &out, c.do(ctx, request{method: http.MethodDelete, path: path("jobs", id), body: reason(why), out: &out})
}

// ExtendLease gives a leased job's holder more time.
func (c *Client) ExtendLease(ctx context.Context, id string, by time.Duration) (*Job, error) {
	return c.jobAction(ctx, id, "extend-lease", map[string]string{"by": by.String()})
}

func (c *Client) jobAction(ctx context.Context, id, action string, body any) (*Job, error) {
	var out Job
	return &out, c.do(ctx, request{method: http.MethodPost, path: path("jobs", id, action), body: body, out: &out})
}

// Stats is the number of jobs per state, overall and per cluster id.
type Stats struct {
	Jobs     map[string]int64            `json:"jobs"`
	Clusters map[string]map[string]int64 `json:"clusters"`
	At       time.Time                   `json:"at"`
}

// QueueHealth is how a cluster's queue is doing. Figures that are unknown
// (nothing queued, no claim or nothing finished in the last hour) are nil.
type QueueHealth struct {
	ClusterID      string    `json:"clusterId"`
	At             time.Time `json:"at"`
	Queued         int64     `json:"queued"`
	InFlight       int64     `json:"inFlight"`
	OldestQueuedAt time.Time `json:"oldestQueuedAt"`
	// OldestQueuedSeconds is how long the oldest queued job has waited.
	OldestQueuedSeconds *float64 `json:"oldestQueuedSeconds"`
	// WaitP50Seconds is the median wait from submit to claim over
	// WaitSamples claims of the last hour.
	WaitP50Seconds *float64  `json:"waitP50Seconds"`
	WaitSamples    int       `json:"waitSamples"`
	LastClaimAt    time.Time `json:"lastClaimAt"`
	// FailureRate is Failed / Finished, of the jobs submitted in the last
	// hour that have ended (canceled ones aside).
	FailureRate *float64 `json:"failureRate"`
	Finished    int64    `json:"finished"`
	Failed      int64    `json:"failed"`
	// NotDraining: jobs wait, none is in flight or was claimed lately, while
	// the agent heartbeats and the queue is not paused. Reason says so.
	NotDraining bool   `json:"notDraining"`
	Reason      string `json:"reason"`
}

// Stats returns the job counts.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var out Stats
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/stats", out: &out})
}

// Queues returns the queue health of every cluster, in name order.
func (c *Client) Queues(ctx context.Context) ([]QueueHealth, error) {
	var out Page[QueueHealth]
	return out.Items, c.do(ctx, request{method: http.MethodGet, path: "/queues", out: &out})
}

// ClusterQueue returns one cluster's queue health, by id or name.
func (c *Client) ClusterQueue(ctx context.Context, cluster string) (*QueueHealth, error) {
	var out QueueHealth
	return &out, c.do(ctx, request{method: http.MethodGet, path: path("clusters", cluster, "queue"), out: &out})
}

// AuditEntry is one entry of the audit trail.
type AuditEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`
	ClusterID  string    `json:"clusterId"`
	TargetKind string    `json:"targetKind"`
	TargetID   string    `json:"targetId"`
	Reason     string    `json:"reason"`
}

// ListAudit returns a page of the audit trail, newest first; action is a
// prefix ("job.", "credential.revoke").
func (c *Client) ListAudit(ctx context.Context, cluster, action string, limit int, cursor string) (*Page[AuditEntry], error) {
	v := pageQuery(limit, cursor)
	setIf(v, "cluster", cluster)
	setIf(v, "action", action)
	var out Page[AuditEntry]
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/audit", query: v, out: &out})
}

// Rollout is a rollout with its counts and (from GetRollout) its targets.
type Rollout struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Selector    string         `json:"selector"`
	Kind        string         `json:"kind"`
	MaxParallel int            `json:"maxParallel"`
	MaxFailures int            `json:"maxFailures"`
	State       string         `json:"state"`
	Counts      map[string]int `json:"counts"`
	CreatedAt   time.Time      `json:"createdAt"`
	FinishedAt  time.Time      `json:"finishedAt"`
	Targets     []struct {
		Position    int    `json:"position"`
		ClusterID   string `json:"clusterId"`
		ClusterName string `json:"clusterName"`
		State       string `json:"state"`
		Reason      string `json:"reason"`
		JobID       string `json:"jobId"`
		Attempts    int    `json:"attempts"`
	} `json:"targets"`
}

// RolloutSpec creates a rollout.
type RolloutSpec struct {
	Name         string          `json:"name,omitempty"`
	Selector     string          `json:"selector"`
	Kind         string          `json:"kind"`
	Payload      json.RawMessage `json:"payload"`
	MaxParallel  int             `json:"maxParallel,omitempty"`
	MaxFailures  int             `json:"maxFailures,omitempty"`
	PauseBetween string          `json:"pauseBetween,omitempty"`
	Order        string          `json:"order,omitempty"`
	DryRun       bool            `json:"dryRun,omitempty"`
}

// CreateRollout creates (or, with DryRun, only plans) a rollout.
func (c *Client) CreateRollout(ctx context.Context, spec RolloutSpec) (*Rollout, error) {
	var out Rollout
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/rollouts", body: spec, out: &out})
}

// GetRollout returns a rollout by id or name, with every target.
func (c *Client) GetRollout(ctx context.Context, rollout string) (*Rollout, error) {
	var out Rollout
	return &out, c.do(ctx, request{method: http.MethodGet, path: path("rollouts", rollout), out: &out})
}

// RolloutAction is "pause", "resume", "abort" or "retry-failed".
func (c *Client) RolloutAction(ctx context.Context, rollout, action, why string) (*Rollout, error) {
	var out Rollout
	return &out, c.do(ctx, request{method: http.MethodPost, path: path("rollouts", rollout, action), body: reason(why), out: &out})
}

func setIf(v url.Values, k, value string) {
	if value != "" {
		v.Set(k, value)
	}
}
