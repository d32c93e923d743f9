package registry

import (
	"context"
	"time"
)

// EventStore is the part of Store that keeps the events agents report.
// Every method that writes is atomic, as Store's are.
type EventStore interface {
	// EventsAppend stores a batch of a cluster's events, dropping those whose
	// eventKey was already seen at or after p.DedupeAfter (an older sighting is
	// renewed instead), and applies p.Heartbeat to the cluster's status. It
	// returns how many events were stored.
	EventsAppend(ctx context.Context, p EventsAppendParams) (int, error)
	// EventList returns events matching p, newest first.
	EventList(ctx context.Context, p EventListParams) ([]Event, error)
	// EventsPrune deletes events older than p.OlderThan and beyond the newest
	// p.KeepPerCluster of each cluster, and forgets event keys last seen
	// before p.KeysBefore. It returns how many events it deleted.
	EventsPrune(ctx context.Context, p EventsPruneParams) (int, error)
}

type EventsAppendParams struct {
	ClusterID   string
	Events      []Event
	Now         time.Time
	DedupeAfter time.Time
	Heartbeat   *HeartbeatUpdate
}

// HeartbeatUpdate is what a ClusterHeartbeat changes in a cluster's status.
type HeartbeatUpdate struct {
	At time.Time
	// Conditions replace the stored ones when non-nil.
	Conditions []Condition
}

type EventListParams struct {
	ClusterID string
	// ClusterIDs, when set, keeps these clusters' only: the registry sets
	// it for an actor confined to an organization.
	ClusterIDs []string
	Kinds      []string
	FalseOnly  bool // only events with a False condition
	BeforeID   int64
	AfterID    int64
	Limit      int
}

type EventsPruneParams struct {
	OlderThan      time.Time
	KeepPerCluster int
	KeysBefore     time.Time
}
