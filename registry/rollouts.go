package registry

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Audit actions of rollouts.
const (
	AuditRolloutCreate   = "rollout.create"
	AuditRolloutPause    = "rollout.pause"
	AuditRolloutResume   = "rollout.resume"
	AuditRolloutAbort    = "rollout.abort"
	AuditRolloutRetry    = "rollout.retry_failed"
	AuditRolloutHalt     = "rollout.halt"     // by the rollout itself: too many failures
	AuditRolloutComplete = "rollout.complete" // by the rollout itself
)

// rolloutActor advances rollouts in the background.
var rolloutActor = Actor{Kind: ActorSystem, Name: "rollouts"}

// casAttempts bounds how often an operation that is meaningful on any
// version re-reads and re-applies after a concurrent change won.
const casAttempts = 5

// CreateRollout freezes the clusters spec.Selector matches (in the actor's
// scope), marks those whose allowlists refuse the payload as refused with the
// rule, stores the rollout and starts its first wave. With spec.DryRun it
// returns the rollout it would create and stores nothing.
func (r *Registry) CreateRollout(ctx context.Context, spec RolloutSpec) (*Rollout, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	if err := spec.normalize(); err != nil {
		return nil, err
	}
	spec.Payload = bytes.TrimSpace(spec.Payload)
	if err := PayloadJSONError(spec.Payload); err != nil {
		return nil, err
	}
	clusters, err := r.ListClusters(ctx, ClusterListParams{Selector: spec.Selector})
	if err != nil {
		return nil, err
	}
	if len(clusters) == 0 {
		return nil, Errorf(CodeInvalid, "label selector %q matches no cluster (tether cluster list -l %q shows what it matches)", spec.Selector, spec.Selector)
	}
	if len(clusters) > MaxRolloutTargets {
		return nil, Errorf(CodeInvalid, "label selector %q matches %d clusters; a rollout reaches at most %d", spec.Selector, len(clusters), MaxRolloutTargets)
	}
	sortTargets(clusters, orderKey(spec.Order))

	now := r.Now()
	id := "ro-" + newULID()
	if spec.Name == "" {
		spec.Name = string(spec.Kind) + "-" + id[len(id)-6:]
	}
	ro := &Rollout{
		ID: id, Name: spec.Name, Organization: orgScope(ctx), Selector: spec.Selector, Kind: spec.Kind,
		Payload: spec.Payload, MaxParallel: spec.MaxParallel, MaxFailures: spec.MaxFailures,
		PauseBetween: spec.PauseBetween, Order: spec.Order, State: RolloutRunning, Version: 1,
		CreatedBy: ActorFrom(ctx).String(), CreatedAt: now, UpdatedAt: now,
	}
	for i := range clusters {
		c := &clusters[i]
		// A cluster whose payloads this tether cannot seal would stop the
		// rollout at its wave: refuse before storing anything.
		if err := r.canSeal(&c.ClusterSpec); err != nil {
			return nil, Errorf(ErrorCode(err), "cluster %s requires encrypted payloads: %s", c.Name, ErrorMessage(err))
		}
		t := RolloutTarget{Position: i, ClusterID: c.ID, ClusterName: c.Name, State: TargetPending}
		if _, err := checkPayload(c, spec.Kind, spec.Payload); err != nil {
			if !IsPolicyRefusal(err) {
				return nil, err // the payload's shape: wrong for every cluster alike
			}
			t.State, t.Reason = TargetRefused, ErrorMessage(err)
		}
		ro.Targets = append(ro.Targets, t)
	}
	ro.CountTargets()
	if spec.DryRun {
		return ro, nil
	}
	reason := fmt.Sprintf("%s %s on %q: %d targets, %d refused; max parallel %d, max failures %d",
		ro.Kind, ro.Name, ro.Selector, len(ro.Targets), ro.Counts[TargetRefused], ro.MaxParallel, ro.MaxFailures)
	err = r.store.RolloutCreate(ctx, RolloutCreateParams{
		Rollout: *ro,
		Audit:   []AuditEntry{r.auditEntry(ctx, AuditRolloutCreate, "", "rollout", ro.ID, reason)},
	})
	if err != nil {
		return nil, err
	}
	return r.changeRollout(ctx, ro.ID, func(*rolloutStep) error { return nil })
}

// sortTargets orders clusters by name, or by the value of a label (clusters
// without it last) and then by name. Whole-number values come first, in
// numeric order (wave=2 before wave=10), then the others as text.
func sortTargets(clusters []Cluster, labelKey string) {
	slices.SortStableFunc(clusters, func(a, b Cluster) int {
		if labelKey != "" {
			va, oka := a.Labels[labelKey]
			vb, okb := b.Labels[labelKey]
			if oka != okb {
				if oka {
					return -1
				}
				return 1
			}
			if c := compareLabelValues(va, vb); c != 0 {
				return c
			}
		}
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.ID, b.ID))
	})
}

func compareLabelValues(a, b string) int {
	na, erra := strconv.ParseInt(a, 10, 64)
	nb, errb := strconv.ParseInt(b, 10, 64)
	switch {
	case erra == nil && errb == nil:
		return cmp.Compare(na, nb)
	case erra == nil:
		return -1 // numbers before text, so that the order is one order
	case errb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// GetRollout returns a rollout with its targets, by id or name.
func (r *Registry) GetRollout(ctx context.Context, idOrName string) (*Rollout, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	ref := strings.TrimSpace(idOrName)
	if ref == "" {
		return nil, Errorf(CodeInvalid, "a rollout id or name is required")
	}
	ro, err := r.store.RolloutGet(ctx, ref)
	if ErrorCode(err) == CodeNotFound {
		ro, err = r.store.RolloutGetByName(ctx, ref)
	}
	if ErrorCode(err) == CodeNotFound || (err == nil && !rolloutInScope(ctx, ro)) {
		return nil, Errorf(CodeNotFound, "no rollout has the id or name %q (tether rollout list shows them)", ref)
	}
	return ro, err
}

func rolloutInScope(ctx context.Context, ro *Rollout) bool {
	org := orgScope(ctx)
	return org == "" || ro.Organization == org
}

// ListRollouts returns rollouts newest first, with counts but no targets.
func (r *Registry) ListRollouts(ctx context.Context, p RolloutListParams) ([]Rollout, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	if org := orgScope(ctx); org != "" {
		p.Organization = org
	}
	return r.store.RolloutList(ctx, p)
}

// PauseRollout stops a running rollout from starting new waves; its running
// jobs finish and are recorded.
func (r *Registry) PauseRollout(ctx context.Context, idOrName, reason string) (*Rollout, error) {
	return r.adminRolloutChange(ctx, idOrName, AuditRolloutPause, reason, func(s *rolloutStep) error {
		if s.ro.State != RolloutRunning {
			return Errorf(CodeConflict, "rollout %s is %s; only a running rollout can be paused", s.ro.Name, s.ro.State)
		}
		s.ro.State = RolloutPaused
		return nil
	})
}

// ResumeRollout continues a paused or halted rollout. Resuming a halted one
// accepts the failures so far: the halt threshold counts from here.
func (r *Registry) ResumeRollout(ctx context.Context, idOrName, reason string) (*Rollout, error) {
	return r.adminRolloutChange(ctx, idOrName, AuditRolloutResume, reason, func(s *rolloutStep) error {
		switch s.ro.State {
		case RolloutPaused:
		case RolloutHalted:
			s.ro.FailureBase = s.count(TargetFailed)
		default:
			return Errorf(CodeConflict, "rollout %s is %s; only a paused or halted rollout can be resumed", s.ro.Name, s.ro.State)
		}
		s.ro.State = RolloutRunning
		s.ro.NextWaveAt = time.Time{}
		return nil
	})
}

// AbortRollout ends a rollout: its queued jobs are canceled, targets not yet
// reached are skipped, and jobs already running finish and are recorded.
func (r *Registry) AbortRollout(ctx context.Context, idOrName, reason string) (*Rollout, error) {
	ro, err := r.adminRolloutChange(ctx, idOrName, AuditRolloutAbort, reason, func(s *rolloutStep) error {
		if s.ro.State.Terminal() {
			return Errorf(CodeConflict, "rollout %s is already %s", s.ro.Name, s.ro.State)
		}
		s.ro.State = RolloutAborted
		msg := "aborted by " + s.actor
		if reason != "" {
			msg += ": " + reason
		}
		for i := range s.ro.Targets {
			t := &s.ro.Targets[i]
			switch {
			case t.State == TargetPending:
				t.State, t.Reason, t.FinishedAt = TargetSkipped, msg, s.now
			case t.State == TargetRunning && t.JobState == JobQueued:
				errText := ErrorCanceled
				var noLease time.Time
				why := "canceled: rollout " + s.ro.Name + " " + msg
				s.cancel = append(s.cancel, JobUpdateParams{
					ID: t.JobID, FromStates: []JobState{JobQueued},
					Set:     JobSet{Now: s.now, State: JobCanceled, Error: &errText, FinishedAt: s.now, LeaseExpiresAt: &noLease},
					History: &JobHistoryEntry{At: s.now, Type: HistoryCanceled, Actor: s.actor, Message: why},
					Audit:   &AuditEntry{At: s.now, Actor: s.actor, Action: AuditJobCancel, TargetKind: "job", TargetID: t.JobID, Reason: why},
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The cancels are conditional (a job may have been acked meanwhile), so
	// their targets are settled by the next step, taken now.
	return r.changeRollout(ctx, ro.ID, func(*rolloutStep) error { return nil })
}

// RetryFailedRollout gives the failed and refused targets of a rollout a new
// turn (refused ones are checked against their cluster's allowlists again):
// they go back to pending and get a new job when their wave comes. A halted
// or completed rollout runs again; a paused one stays paused.
func (r *Registry) RetryFailedRollout(ctx context.Context, idOrName, reason string) (*Rollout, error) {
	return r.adminRolloutChange(ctx, idOrName, AuditRolloutRetry, reason, func(s *rolloutStep) error {
		if s.ro.State == RolloutAborted {
			return Errorf(CodeConflict, "rollout %s was aborted; create a new rollout instead", s.ro.Name)
		}
		n := 0
		for i := range s.ro.Targets {
			t := &s.ro.Targets[i]
			if t.State == TargetFailed || t.State == TargetRefused {
				t.State, t.Reason, t.FinishedAt = TargetPending, "", time.Time{}
				n++
			}
		}
		if n == 0 {
			return Errorf(CodeConflict, "rollout %s has no failed or refused target to retry", s.ro.Name)
		}
		s.ro.FailureBase = 0
		if s.ro.State == RolloutHalted || s.ro.State == RolloutCompleted {
			s.ro.State, s.ro.FinishedAt, s.ro.NextWaveAt = RolloutRunning, time.Time{}, time.Time{}
		}
		return nil
	})
}

// AdvanceRollout records the outcomes of a rollout's finished jobs and starts
// its next wave when one is due, as the rollouts service does. A step whose
// rollout changed meanwhile is dropped: the change that won saw it.
func (r *Registry) AdvanceRollout(ctx context.Context, id string) (*Rollout, error) {
	ctx = WithActor(ctx, rolloutActor)
	return r.changeRollout(ctx, id, func(*rolloutStep) error { return nil })
}

func (r *Registry) adminRolloutChange(ctx context.Context, idOrName, action, reason string, change func(*rolloutStep) error) (*Rollout, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	ro, err := r.GetRollout(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	return r.changeRollout(ctx, ro.ID, func(s *rolloutStep) error {
		if err := change(s); err != nil {
			return err
		}
		s.audit = append(s.audit, AuditEntry{At: s.now, Actor: s.actor, Action: action, TargetKind: "rollout", TargetID: s.ro.ID, Reason: reason})
		return nil
	})
}

// changeRollout applies change to the rollout as it is now, then lets the
// rollout take its own step (record outcomes, halt, complete, start a wave),
// and writes the whole as one compare-and-swap, re-reading and re-applying
// when a concurrent change won.
func (r *Registry) changeRollout(ctx context.Context, id string, change func(*rolloutStep) error) (*Rollout, error) {
	for attempt := 1; ; attempt++ {
		orig, err := r.store.RolloutGet(ctx, id)
		if err != nil {
			return nil, err
		}
		s := newRolloutStep(orig, r.Now(), ActorFrom(ctx).String())
		if err := change(s); err != nil {
			return nil, err
		}
		if err := r.advance(ctx, s); err != nil {
			return nil, err
		}
		p, changed := s.params()
		if !changed {
			return orig, nil
		}
		ro, err := r.store.RolloutApply(ctx, p)
		if ErrorCode(err) == CodeConflict && attempt < casAttempts {
			continue
		}
		return ro, err
	}
}

// rolloutStep is a rollout being changed in memory: the change is the
// difference between orig and ro, plus the jobs to create and cancel.
type rolloutStep struct {
	orig    *Rollout
	ro      Rollout
	now     time.Time
	actor   string
	newJobs map[int]*JobInsertParams // by target position
	cancel  []JobUpdateParams
	audit   []AuditEntry
}

func newRolloutStep(orig *Rollout, now time.Time, actor string) *rolloutStep {
	ro := *orig
	ro.Targets = slices.Clone(orig.Targets)
	return &rolloutStep{orig: orig, ro: ro, now: now, actor: actor, newJobs: map[int]*JobInsertParams{}}
}

func (s *rolloutStep) count(state TargetState) int {
	n := 0
	for _, t := range s.ro.Targets {
		if t.State == state {
			n++
		}
	}
	return n
}

// advance is the rollout's own step: record what its jobs did, then halt,
// complete or start the next wave as its state and counts say.
func (r *Registry) advance(ctx context.Context, s *rolloutStep) error {
	ro := &s.ro
	waveEnded := false
	for i := range ro.Targets {
		t := &ro.Targets[i]
		if t.State != TargetRunning {
			continue
		}
		switch {
		case t.JobState == "":
			t.State, t.Reason = TargetFailed, "job "+t.JobID+" no longer exists (its cluster was deleted?)"
		case !t.JobState.Terminal():
			continue
		case t.JobState == JobSucceeded || t.JobState == JobNoop:
			t.State, t.Reason = TargetSucceeded, ""
		case t.JobState == JobCanceled && ro.State == RolloutAborted:
			t.State, t.Reason = TargetSkipped, "its job was canceled when the rollout was aborted"
		default:
			t.State, t.Reason = TargetFailed, "job "+t.JobID+" ended "+string(t.JobState)
			if t.JobError != "" {
				t.Reason += ": " + t.JobError
			}
		}
		t.FinishedAt = s.now
		waveEnded = true
	}
	if waveEnded && s.count(TargetRunning) > 0 {
		waveEnded = false
	}
	switch ro.State {
	case RolloutRunning:
		if waveEnded && ro.PauseBetween > 0 {
			ro.NextWaveAt = s.now.Add(ro.PauseBetween)
		}
		for !r.halt(s) && s.count(TargetRunning) == 0 && s.count(TargetPending) > 0 && !s.now.Before(ro.NextWaveAt) {
			if err := r.startWave(ctx, s); err != nil {
				return err
			}
		}
		if ro.State == RolloutRunning && s.count(TargetRunning) == 0 && s.count(TargetPending) == 0 {
			ro.State, ro.FinishedAt = RolloutCompleted, s.now
			s.audit = append(s.audit, AuditEntry{At: s.now, Actor: s.actor, Action: AuditRolloutComplete, TargetKind: "rollout", TargetID: ro.ID,
				Reason: fmt.Sprintf("%d succeeded, %d failed, %d refused", s.count(TargetSucceeded), s.count(TargetFailed), s.count(TargetRefused))})
		}
	case RolloutAborted:
		if ro.FinishedAt.IsZero() && s.count(TargetRunning) == 0 {
			ro.FinishedAt = s.now
		}
	}
	return nil
}

// halt halts a running rollout past its failure threshold, and reports
// whether it is halted.
func (r *Registry) halt(s *rolloutStep) bool {
	ro := &s.ro
	if ro.State == RolloutHalted {
		return true
	}
	failures := s.count(TargetFailed) - ro.FailureBase
	if failures <= ro.MaxFailures {
		return false
	}
	ro.State = RolloutHalted
	s.audit = append(s.audit, AuditEntry{At: s.now, Actor: s.actor, Action: AuditRolloutHalt, TargetKind: "rollout", TargetID: ro.ID,
		Reason: fmt.Sprintf("%d failures; at most %d are allowed (resume to go on, retry-failed to try the failed targets again, abort to stop)", failures, ro.MaxFailures)})
	return true
}

// startWave starts the next MaxParallel pending targets, in order. A target
// whose cluster was deleted or disabled fails; one whose cluster's allowlists
// now refuse the payload is refused.
func (r *Registry) startWave(ctx context.Context, s *rolloutStep) error {
	ro := &s.ro
	started := 0
	for i := range ro.Targets {
		if started == ro.MaxParallel {
			break
		}
		t := &ro.Targets[i]
		if t.State != TargetPending {
			continue
		}
		started++
		t.StartedAt, t.FinishedAt = s.now, time.Time{}
		c, err := r.store.ClusterGet(ctx, t.ClusterID)
		switch {
		case ErrorCode(err) == CodeNotFound:
			t.State, t.Reason, t.FinishedAt = TargetFailed, "cluster "+t.ClusterName+" was deleted", s.now
			continue
		case err != nil:
			return err
		case c.State == ClusterDisabled:
			t.State, t.Reason, t.FinishedAt = TargetFailed, "cluster "+c.Name+" is disabled", s.now
			continue
		}
		checked, err := checkPayload(c, ro.Kind, ro.Payload)
		if err != nil {
			t.State, t.Reason, t.FinishedAt = TargetRefused, ErrorMessage(err), s.now
			continue
		}
		t.Attempts++
		j := Job{
			ID: newJobID(), ClusterID: c.ID, Kind: ro.Kind, Intent: checked.intent, Target: checked.target,
			Payload: ro.Payload, IdempotencyKey: rolloutIdempotencyKey(ro.ID, c.ID, t.Attempts), State: JobQueued, Attempt: 1,
			CreatedAt: s.now, UpdatedAt: s.now, SubmittedBy: "rollout:" + ro.Name,
		}
		if err := r.sealJob(c, &j); err != nil {
			return err
		}
		msg := fmt.Sprintf("submitted %s %s by rollout %s (target %d of %d)", j.Kind, j.Target, ro.Name, t.Position+1, len(ro.Targets))
		s.newJobs[t.Position] = &JobInsertParams{
			Job:      j,
			History:  JobHistoryEntry{At: s.now, Type: HistorySubmitted, Actor: s.actor, Message: msg},
			Audit:    AuditEntry{At: s.now, Actor: s.actor, Action: AuditJobSubmit, ClusterID: c.ID, TargetKind: "job", TargetID: j.ID, Reason: "rollout " + ro.Name},
			KeyUntil: r.keyUntil(j.IdempotencyKey, s.now),
		}
		t.State, t.Reason, t.JobID, t.JobState = TargetRunning, "", j.ID, JobQueued
	}
	return nil
}

// params is the step as the store applies it; changed is false when the step
// changes nothing.
func (s *rolloutStep) params() (RolloutApplyParams, bool) {
	p := RolloutApplyParams{ID: s.orig.ID, Version: s.orig.Version, Now: s.now, Cancel: s.cancel, Audit: s.audit}
	o, n := s.orig, &s.ro
	if n.State != o.State {
		p.Set.State = n.State
	}
	if n.FailureBase != o.FailureBase {
		p.Set.FailureBase = &n.FailureBase
	}
	if !n.NextWaveAt.Equal(o.NextWaveAt) {
		p.Set.NextWaveAt = &n.NextWaveAt
	}
	if !n.FinishedAt.Equal(o.FinishedAt) {
		p.Set.FinishedAt = &n.FinishedAt
	}
	for i, t := range n.Targets {
		ot := o.Targets[i]
		job := s.newJobs[t.Position]
		if job == nil && t.State == ot.State && t.Reason == ot.Reason && t.JobID == ot.JobID && t.Attempts == ot.Attempts &&
			t.StartedAt.Equal(ot.StartedAt) && t.FinishedAt.Equal(ot.FinishedAt) {
			continue
		}
		p.Targets = append(p.Targets, RolloutTargetSet{
			Position: t.Position, State: t.State, Reason: t.Reason, JobID: t.JobID, Attempts: t.Attempts,
			StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, NewJob: job,
		})
	}
	changed := p.Set != (RolloutSet{}) || len(p.Targets) > 0 || len(p.Cancel) > 0 || len(p.Audit) > 0
	return p, changed
}
