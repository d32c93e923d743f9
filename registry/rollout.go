package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RolloutState is where a rollout is: running (starting waves), paused (by a
// person: no new waves, running jobs finish), halted (by too many failures),
// and its ends, completed and aborted.
type RolloutState string

const (
	RolloutRunning   RolloutState = "running"
	RolloutPaused    RolloutState = "paused"
	RolloutHalted    RolloutState = "halted"
	RolloutCompleted RolloutState = "completed"
	RolloutAborted   RolloutState = "aborted"
)

// RolloutStates lists every rollout state, live ones first.
var RolloutStates = []RolloutState{RolloutRunning, RolloutPaused, RolloutHalted, RolloutCompleted, RolloutAborted}

// Terminal reports whether the rollout will start no more jobs.
func (s RolloutState) Terminal() bool { return s == RolloutCompleted || s == RolloutAborted }

// TargetState is where one cluster of a rollout is.
type TargetState string

const (
	TargetPending   TargetState = "pending"   // not reached yet
	TargetRunning   TargetState = "running"   // its job is open
	TargetSucceeded TargetState = "succeeded" // its job succeeded (or was a no-op)
	TargetFailed    TargetState = "failed"    // its job failed, conflicted, expired or was canceled; or its cluster was disabled or deleted
	TargetRefused   TargetState = "refused"   // the cluster's allowlists refuse the payload
	TargetSkipped   TargetState = "skipped"   // the rollout was aborted before reaching it
)

// TargetStates lists every target state in the order counts show them.
var TargetStates = []TargetState{TargetPending, TargetRunning, TargetSucceeded, TargetFailed, TargetRefused, TargetSkipped}

// Done reports whether the target needs nothing more.
func (s TargetState) Done() bool { return s != TargetPending && s != TargetRunning }

// Rollout defaults and bounds.
const (
	DefaultRolloutMaxParallel = 1
	MaxRolloutMaxParallel     = 1000
	MaxRolloutTargets         = 10000
	MaxRolloutPauseBetween    = 7 * 24 * time.Hour
	RolloutOrderName          = "name"
	rolloutOrderLabel         = "label="
)

// Rollout rolls one job (kind and payload) across the clusters a label
// selector picked when it was created, wave by wave: at most MaxParallel
// targets run at once, the next wave starts when the previous one has
// finished (and PauseBetween has passed), and more than MaxFailures failures
// halt it.
type Rollout struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Organization string          `json:"organization,omitempty"`
	Selector     string          `json:"selector"`
	Kind         JobKind         `json:"kind"`
	Payload      json.RawMessage `json:"payload"`
	MaxParallel  int             `json:"maxParallel"`
	MaxFailures  int             `json:"maxFailures"`
	PauseBetween time.Duration   `json:"pauseBetween"`
	Order        string          `json:"order"`
	State        RolloutState    `json:"state"`
	// FailureBase is the number of failures a resume accepted: the halt
	// threshold counts failures beyond it.
	FailureBase int       `json:"failureBase,omitempty"`
	NextWaveAt  time.Time `json:"nextWaveAt,omitzero"`
	Version     int64     `json:"version"`
	CreatedBy   string    `json:"createdBy"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	// Counts is the number of targets in each state.
	Counts map[TargetState]int `json:"counts"`
	// Targets, in the order they are reached (RolloutGet only).
	Targets []RolloutTarget `json:"targets,omitempty"`
}

// RolloutTarget is one cluster of a rollout.
type RolloutTarget struct {
	Position    int         `json:"position"`
	ClusterID   string      `json:"clusterId"`
	ClusterName string      `json:"clusterName"`
	State       TargetState `json:"state"`
	// Reason says why a target failed, was refused or skipped.
	Reason     string    `json:"reason,omitempty"`
	JobID      string    `json:"jobId,omitempty"`
	Attempts   int       `json:"attempts"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// The current job as it is now (RolloutGet only): empty when the target
	// has no job or the job no longer exists.
	JobState   JobState `json:"jobState,omitempty"`
	JobAttempt int      `json:"jobAttempt,omitempty"`
	JobError   string   `json:"jobError,omitempty"`
}

// Failures is how many targets failed.
func (r *Rollout) Failures() int { return r.Counts[TargetFailed] }

// Total is the number of targets.
func (r *Rollout) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// Done is the number of targets that need nothing more.
func (r *Rollout) Done() int {
	n := 0
	for s, c := range r.Counts {
		if s.Done() {
			n += c
		}
	}
	return n
}

// CountTargets fills Counts from Targets.
func (r *Rollout) CountTargets() {
	r.Counts = map[TargetState]int{}
	for _, t := range r.Targets {
		r.Counts[t.State]++
	}
}

// Summary is a one-line account of the targets: "3/10 done: 2 succeeded, 1
// failed, 2 running, 5 pending".
func (r *Rollout) Summary() string {
	var parts []string
	for _, s := range []TargetState{TargetSucceeded, TargetFailed, TargetRefused, TargetSkipped, TargetRunning, TargetPending} {
		if n := r.Counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no targets"
	}
	return fmt.Sprintf("%d/%d done: %s", r.Done(), r.Total(), strings.Join(parts, ", "))
}

// RolloutSpec is what creating a rollout asks for.
type RolloutSpec struct {
	Name         string
	Selector     string
	Kind         JobKind
	Payload      json.RawMessage
	MaxParallel  int // DefaultRolloutMaxParallel when zero
	MaxFailures  int // 0: the first failure halts
	PauseBetween time.Duration
	Order        string // "name" (the default) or "label=KEY"
	// DryRun computes the targets and refusals and stores nothing.
	DryRun bool
}

func (s *RolloutSpec) normalize() error {
	s.Name = strings.TrimSpace(s.Name)
	if len(s.Name) > 100 || strings.ContainsFunc(s.Name, isControl) {
		return Errorf(CodeInvalid, "rollout name %q must be at most 100 printable characters", s.Name)
	}
	if s.MaxParallel == 0 {
		s.MaxParallel = DefaultRolloutMaxParallel
	}
	if s.MaxParallel < 1 || s.MaxParallel > MaxRolloutMaxParallel {
		return Errorf(CodeInvalid, "max-parallel %d must be between 1 and %d", s.MaxParallel, MaxRolloutMaxParallel)
	}
	if s.MaxFailures < 0 {
		return Errorf(CodeInvalid, "max-failures %d must be 0 (halt at the first failure) or more", s.MaxFailures)
	}
	if s.PauseBetween < 0 || s.PauseBetween > MaxRolloutPauseBetween {
		return Errorf(CodeInvalid, "pause-between %s must be between 0 and %s", s.PauseBetween, MaxRolloutPauseBetween)
	}
	s.Order = strings.TrimSpace(s.Order)
	if s.Order == "" {
		s.Order = RolloutOrderName
	}
	if key, ok := strings.CutPrefix(s.Order, rolloutOrderLabel); ok {
		if _, err := normalizeLabels(Labels{key: ""}); err != nil || key == "" {
			return Errorf(CodeInvalid, "order %q names no valid label key; use name or label=KEY", s.Order)
		}
	} else if s.Order != RolloutOrderName {
		return Errorf(CodeInvalid, "order %q is not name or label=KEY", s.Order)
	}
	if strings.TrimSpace(s.Selector) == "" {
		return Errorf(CodeInvalid, "a rollout needs a label selector (for example env=prod); use --selector")
	}
	return nil
}

// orderKey is the label an order sorts by first ("" for name order).
func orderKey(order string) string {
	key, _ := strings.CutPrefix(order, rolloutOrderLabel)
	if key == order {
		return ""
	}
	return key
}

// rolloutIdempotencyKey derives a target's job key from the rollout, the
// cluster and the attempt, so that a step applied twice finds its job.
func rolloutIdempotencyKey(rolloutID, clusterID string, attempt int) string {
	return fmt.Sprintf("rollout:%s:%s:%d", rolloutID, clusterID, attempt)
}
