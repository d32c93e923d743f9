package registry

import (
	"context"
	"fmt"
	"strings"
)

// AppendEvents stores a batch of an agent's events. clusterHint is the
// optional top-level clusterId of the request; it must name the agent's own
// cluster. Events whose eventKey was seen within the replay window are
// dropped. A ClusterHeartbeat updates the cluster's observed status. It returns
// how many events were stored.
func (r *Registry) AppendEvents(ctx context.Context, a *Agent, clusterHint string, events []Event) (int, error) {
	if clusterHint != "" && clusterHint != a.Cluster.ID {
		return 0, Errorf(CodeForbidden, "clusterId does not name this credential's cluster")
	}
	if len(events) == 0 {
		return 0, Errorf(CodeInvalid, "events must hold at least one event")
	}
	if len(events) > MaxEventsPerBatch {
		return 0, Errorf(CodeTooLarge, "a batch holds at most %d events; this one has %d (send smaller batches)", MaxEventsPerBatch, len(events))
	}
	now := r.Now()
	var hb *HeartbeatUpdate
	for i := range events {
		e := &events[i]
		e.Kind = strings.TrimSpace(e.Kind)
		if e.Kind == "" {
			return 0, Errorf(CodeInvalid, "events[%d].kind is required", i)
		}
		if len(e.Kind) > 100 {
			return 0, Errorf(CodeInvalid, "events[%d].kind is longer than 100 characters", i)
		}
		if len(e.EventKey) > maxEventKeyBytes {
			return 0, Errorf(CodeInvalid, "events[%d].eventKey is longer than %d bytes", i, maxEventKeyBytes)
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"kind", &e.Kind}, {"eventKey", &e.EventKey}, {"message", &e.Message}, {"resourceRef.apiVersion", &e.ResourceRef.APIVersion},
			{"resourceRef.kind", &e.ResourceRef.Kind}, {"resourceRef.namespace", &e.ResourceRef.Namespace},
			{"resourceRef.name", &e.ResourceRef.Name}, {"resourceRef.uid", &e.ResourceRef.UID}} {
			if err := agentText(fmt.Sprintf("events[%d].%s", i, f.name), f.v); err != nil {
				return 0, err
			}
		}
		if err := agentConditions(fmt.Sprintf("events[%d].conditions", i), e.Conditions); err != nil {
			return 0, err
		}
		e.ClusterID = a.Cluster.ID
		e.ReceivedAt = now
		if e.Kind == EventClusterHeartbeat {
			if e.ResourceRef.Name != "" && e.ResourceRef.Name != a.Cluster.ID {
				return 0, Errorf(CodeForbidden, "events[%d] is a heartbeat for another cluster; a credential reports only for its own cluster", i)
			}
			hb = &HeartbeatUpdate{At: now, Conditions: e.Conditions}
		}
	}
	return r.store.EventsAppend(ctx, EventsAppendParams{
		ClusterID: a.Cluster.ID, Events: events, Now: now,
		DedupeAfter: now.Add(-r.cfg.EventReplayWindow), Heartbeat: hb,
	})
}

// ListEvents returns events matching p, newest first.
func (r *Registry) ListEvents(ctx context.Context, p EventListParams) ([]Event, error) {
	ids, any, err := r.scopeClusterList(ctx, p.ClusterID)
	if err != nil || !any {
		return []Event{}, err
	}
	p.ClusterIDs = ids
	for _, k := range p.Kinds {
		if err := checkQueryText("kind", k); err != nil {
			return nil, err
		}
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	return r.store.EventList(ctx, p)
}

// ListAudit returns audit entries matching p, newest first.
func (r *Registry) ListAudit(ctx context.Context, p AuditListParams) ([]AuditEntry, error) {
	ids, any, err := r.scopeClusterList(ctx, p.ClusterID)
	if err != nil || !any {
		return []AuditEntry{}, err
	}
	p.ClusterIDs = ids
	if err := checkQueryText("action", p.Action); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	list, err := r.store.AuditList(ctx, p)
	for i := range list {
		redactWebhookAudit(&list[i])
	}
	return list, err
}

// scopeClusterList checks a read of one cluster's records (or of every
// cluster's, when clusterID is empty) and returns the clusters an actor
// confined to an organization may read them of when it names none: its
// organization's (nil: no narrowing). any is false when it may see none.
func (r *Registry) scopeClusterList(ctx context.Context, clusterID string) (ids []string, any bool, err error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, false, err
	}
	if orgScope(ctx) == "" {
		return nil, true, nil
	}
	if clusterID != "" {
		_, err := r.GetCluster(ctx, clusterID)
		return nil, err == nil, err
	}
	return r.scopedClusterIDs(ctx, nil)
}
