package registry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tetherhq/tether/internal/jobsig"
	"github.com/tetherhq/tether/internal/jwe"
)

// Delivery (issues 28 and 29): a poll's batch, ready for the wire. Each job
// is prepared on its own (its payload opened if sealed, encrypted and signed
// as the cluster's policy asks at delivery), so that one job that cannot be
// prepared never withholds the others:
//
//   - A job that can never be prepared is undeliverable: its payload has no
//     RFC 8785 form, so it cannot be signed however often it is tried. It
//     ends failed in the same poll, with an error saying why and an audit
//     entry; producers hear of it as of any failure (webhooks, watch).
//   - A job this replica cannot prepare now is deferred: its sealed payload
//     or the cluster's signing key does not open with this replica's key
//     file, the key file is missing, the cluster's public key is unusable, or
//     the store failed. It is not the job's fault: it stays queued and is
//     made visible again at once (another replica may hold what this one
//     lacks), and the caller logs it.

// AuditJobUndeliverable: a poll ended a job it could never hand out.
const AuditJobUndeliverable = "job.undeliverable"

// ErrorUndeliverablePrefix starts the error of a job ended undeliverable.
const ErrorUndeliverablePrefix = "undeliverable: "

// DeliveredJob is a job as its agent gets it.
type DeliveredJob struct {
	// Job's Payload is the plaintext, or nil when EncryptedPayload
	// carries it; its sealed form is dropped.
	Job
	// EncryptedPayload: the payload as a JWE to the cluster's public key,
	// for clusters that require encrypted payloads.
	EncryptedPayload string
	LeaseSeconds     int
	// For clusters that require signed payloads: the key's id, the bound
	// signature and its format (jobsig.FormatV2), and, where the policy
	// allows it, the legacy payload-only signature (format v1).
	SignatureKeyID     string
	JobSignature       string
	JobSignatureFormat string
	LegacySignature    string
}

// SetAside is a job a poll did not hand out, and why.
type SetAside struct {
	JobID  string
	Kind   JobKind
	Reason string
}

// Delivery is a poll's outcome: the jobs to hand out, oldest first, and
// those set aside.
type Delivery struct {
	Jobs []DeliveredJob
	// Failed jobs were undeliverable and ended failed in this poll.
	Failed []SetAside
	// Deferred jobs stay queued for another poll: this replica could not
	// prepare them now.
	Deferred []SetAside
}

// undeliverable is a job that no poll will ever be able to hand out.
type undeliverable struct{ reason string }

func (u *undeliverable) Error() string { return u.reason }

// DeliverJobs is a poll (PollJobs) whose jobs are prepared for the wire,
// each on its own: see Delivery.
func (r *Registry) DeliverJobs(ctx context.Context, a *Agent, clusterID string, limit int) (*Delivery, error) {
	c, jobs, hiddenUntil, err := r.pollJobs(ctx, a, clusterID, limit)
	if err != nil {
		return nil, err
	}
	d := &Delivery{Jobs: make([]DeliveredJob, 0, len(jobs))}
	if len(jobs) == 0 {
		return d, nil
	}
	p := r.preparer(ctx, c, int(LeaseFor(a)/time.Second))
	var deferred []string
	for i := range jobs {
		dj, err := p.prepare(&jobs[i])
		var u *undeliverable
		switch {
		case err == nil:
			d.Jobs = append(d.Jobs, dj)
		case errors.As(err, &u):
			ended, ferr := r.failUndeliverable(ctx, c, &jobs[i], u.reason)
			switch {
			case ferr != nil:
				d.Deferred = append(d.Deferred, SetAside{JobID: jobs[i].ID, Kind: jobs[i].Kind, Reason: "undeliverable, but recording its failure did not work: " + ErrorMessage(ferr)})
				deferred = append(deferred, jobs[i].ID)
			case ended:
				d.Failed = append(d.Failed, SetAside{JobID: jobs[i].ID, Kind: jobs[i].Kind, Reason: u.reason})
			}
			// Not ended and no error: it left the queue meanwhile (canceled).
		default:
			d.Deferred = append(d.Deferred, SetAside{JobID: jobs[i].ID, Kind: jobs[i].Kind, Reason: ErrorMessage(err)})
			deferred = append(deferred, jobs[i].ID)
		}
	}
	if len(deferred) > 0 && !hiddenUntil.IsZero() {
		err := r.store.JobsUnhide(ctx, JobsUnhideParams{ClusterID: c.ID, IDs: deferred, HiddenUntil: hiddenUntil})
		if err != nil {
			// They are offered again when the window ends instead.
			for i := range d.Deferred {
				d.Deferred[i].Reason += " (it stays hidden from polls until " + hiddenUntil.UTC().Format(time.RFC3339) + ": " + ErrorMessage(err) + ")"
			}
		}
	}
	return d, nil
}

// PollJobs returns what a poll hands out: the cluster's queued, unexpired
// jobs, oldest first, as stored (DeliverJobs prepares them for the wire).
// clusterID must be the agent's own cluster.
func (r *Registry) PollJobs(ctx context.Context, a *Agent, clusterID string, limit int) ([]Job, error) {
	_, jobs, _, err := r.pollJobs(ctx, a, clusterID, limit)
	return jobs, err
}

// pollJobs is PollJobs, with the cluster as it is now (whose policy says
// how the jobs travel) and when the jobs handed out become visible again
// (zero: they were not hidden).
func (r *Registry) pollJobs(ctx context.Context, a *Agent, clusterID string, limit int) (*Cluster, []Job, time.Time, error) {
	if clusterID != a.Cluster.ID {
		return nil, nil, time.Time{}, Errorf(CodeForbidden, "this credential belongs to cluster %s, not to the requested cluster", a.Cluster.ID)
	}
	if limit <= 0 {
		limit = DefaultPollLimit
	}
	limit = min(limit, MaxPollLimit)
	// The cluster as it is now (a held poll's agent was read when the poll
	// began): a paused queue hands nothing out. If it cannot be read, the
	// poll fails rather than hand out jobs a pause may be holding back.
	c, err := r.clusterOfAgent(ctx, a.Cluster.ID)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	if c.Paused() {
		return c, []Job{}, time.Time{}, nil
	}
	now := r.Now()
	p := JobsDeliverParams{ClusterID: a.Cluster.ID, Now: now, Limit: limit}
	if r.cfg.VisibilityWindow > 0 {
		p.HideUntil = now.Add(r.cfg.VisibilityWindow)
	}
	jobs, err := r.store.JobsDeliver(ctx, p)
	return c, jobs, p.HideUntil, err
}

// preparer prepares one poll's jobs: the keys are opened once per poll, and
// a key that does not open defers every job that needs it.
type preparer struct {
	r       *Registry
	c       *Cluster
	lease   int
	sign    *signer
	signErr error
	encTo   *jwe.PublicKey
	encErr  error
}

func (r *Registry) preparer(ctx context.Context, c *Cluster, lease int) *preparer {
	p := &preparer{r: r, c: c, lease: lease}
	if c.Policy.RequireSignedPayloads {
		p.sign, p.signErr = r.currentSigner(ctx, c.ID)
	}
	if c.Policy.RequireEncryptedPayloads {
		var err error
		if p.encTo, err = jwe.ParsePublicKey([]byte(c.PublicKey)); err != nil {
			p.encErr = Errorf(CodeInternal, "cluster %s's public key does not parse, so its payloads cannot be encrypted: %v; set a valid one (tether cluster edit --public-key-file)", c.ID, err)
		}
	}
	return p
}

// prepare returns the job as its agent gets it; an *undeliverable error
// when it can never be, any other error when this replica cannot now.
func (p *preparer) prepare(j *Job) (DeliveredJob, error) {
	plain, err := p.r.openPayload(j)
	if err != nil {
		return DeliveredJob{}, err
	}
	d := DeliveredJob{Job: *j, LeaseSeconds: p.lease}
	d.Payload, d.PayloadSealed, d.SealedPayload = plain, false, nil
	wire := plain // what the wire's payload field holds, signed as such
	if len(wire) == 0 {
		wire = json.RawMessage("null")
	}
	if p.c.Policy.RequireSignedPayloads {
		if p.signErr != nil {
			return DeliveredJob{}, p.signErr
		}
		d.JobSignature, err = jobsig.SignJob(p.sign.priv, jobsig.Job{
			ClusterID: p.c.ID, JobID: j.ID, Kind: string(j.Kind), ExpiresAt: j.ExpiresAt, Payload: wire,
		})
		if err != nil {
			return DeliveredJob{}, &undeliverable{reason: ErrorUndeliverablePrefix + err.Error() +
				"; the cluster requires signed payloads, so it can never be handed out"}
		}
		d.SignatureKeyID, d.JobSignatureFormat = p.sign.kid, jobsig.FormatV2
		if p.c.Policy.AllowLegacyPayloadSignatures {
			if d.LegacySignature, err = SignPayload(p.sign.priv, wire); err != nil {
				return DeliveredJob{}, &undeliverable{reason: ErrorUndeliverablePrefix + ErrorMessage(err)}
			}
		}
	}
	if p.c.Policy.RequireEncryptedPayloads {
		if p.encErr != nil {
			return DeliveredJob{}, p.encErr
		}
		if d.EncryptedPayload, err = p.encTo.Encrypt(wire); err != nil {
			return DeliveredJob{}, Internal(err, "encrypt a job's payload")
		}
		d.Payload = nil
	}
	return d, nil
}

// failUndeliverable ends a queued job failed with reason as its error,
// audited. ended is false when the job was no longer queued.
func (r *Registry) failUndeliverable(ctx context.Context, c *Cluster, j *Job, reason string) (ended bool, err error) {
	now := r.Now()
	actor := Actor{Kind: ActorSystem, Name: "delivery"}
	_, applied, err := r.store.JobUpdate(ctx, JobUpdateParams{
		ID: j.ID, ClusterID: c.ID, FromStates: []JobState{JobQueued},
		Set:     JobSet{Now: now, State: JobFailed, Outcome: OutcomeFailed, Error: &reason, FinishedAt: now},
		History: &JobHistoryEntry{At: now, Type: HistoryFailed, Actor: actor.String(), Message: reason},
		Audit:   ptr(r.auditEntry(WithActor(ctx, actor), AuditJobUndeliverable, c.ID, "job", j.ID, reason)),
	})
	return applied, err
}
