package registry

import (
	"encoding/json"
	"time"
)

// Standard event kinds (seed 000). Agents may send others; they are stored too.
const (
	EventConditionTransition = "ConditionTransition"
	EventClusterHeartbeat    = "ClusterHeartbeat"
	EventAudit               = "Audit"
	EventBufferOverflow      = "BufferOverflow"
)

// Event limits and retention defaults.
const (
	MaxEventsPerBatch        = 1000
	DefaultEventReplayWindow = 10 * time.Minute
	DefaultEventRetention    = 7 * 24 * time.Hour
	DefaultEventsPerCluster  = 10000
	maxEventKeyBytes         = 512
)

// ResourceRef is the object an event is about.
type ResourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// Event is something an agent reported that is not tied to a job.
type Event struct {
	ID          int64       `json:"id"`
	ClusterID   string      `json:"clusterId"`
	Kind        string      `json:"kind"`
	EventKey    string      `json:"eventKey,omitempty"`
	ResourceRef ResourceRef `json:"resourceRef"`
	Conditions  []Condition `json:"conditions,omitempty"`
	Message     string      `json:"message,omitempty"`
	// Timestamp is the agent's; ReceivedAt is tether's.
	Timestamp  time.Time `json:"timestamp,omitzero"`
	ReceivedAt time.Time `json:"receivedAt"`
	// Body is the event as the agent sent it, unknown fields included.
	Body json.RawMessage `json:"body,omitempty"`
}

// HasFalseCondition reports whether any condition of the event is False: the
// console highlights these.
func (e *Event) HasFalseCondition() bool {
	for _, c := range e.Conditions {
		if c.Status == "False" {
			return true
		}
	}
	return false
}
