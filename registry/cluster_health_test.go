package registry

import (
	"testing"
	"time"
)

// TestClusterHealthOrder pins the verdict for every combination of state,
// pause, silence and a not-draining queue: the first that holds of
// disabled, pending, silent, paused, not draining, active.
func TestClusterHealthOrder(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh := now.Add(-time.Second)
	stale := now.Add(-SilentAfterHeartbeats*HeartbeatInterval - time.Second)
	for _, state := range []ClusterState{ClusterDisabled, ClusterPending, ClusterActive} {
		for _, paused := range []bool{false, true} {
			for _, silent := range []bool{false, true} {
				for _, q := range []*QueueHealth{nil, {}, {NotDraining: true}} {
					c := &Cluster{State: state, RegisteredAt: now.Add(-time.Hour)}
					c.Status.LastHeartbeatAt = fresh
					if silent {
						c.Status.LastHeartbeatAt = stale
					}
					if paused {
						c.PausedAt = now.Add(-time.Minute)
					}
					var want ClusterHealth
					switch {
					case state == ClusterDisabled:
						want = HealthDisabled
					case state == ClusterPending:
						want = HealthPending
					case silent:
						want = HealthSilent
					case paused:
						want = HealthPaused
					case q != nil && q.NotDraining:
						want = HealthNotDraining
					default:
						want = HealthActive
					}
					if got := c.Health(now, q); got != want {
						t.Errorf("state=%s paused=%v silent=%v q=%+v: Health = %q, want %q", state, paused, silent, q, got, want)
					}
					stranded := want == HealthDisabled || want == HealthPending || want == HealthSilent
					if got := c.Health(now, q).Stranded(); got != stranded {
						t.Errorf("state=%s paused=%v silent=%v: Stranded = %v, want %v", state, paused, silent, got, stranded)
					}
					// One verdict of "queued and nobody takes them": a
					// queued job is stuck, and its cluster in the stuck
					// queries' lists, exactly where the queue is stranded.
					if stuck := (&Job{State: JobQueued}).Diagnose(c, now) != NotStuck; stuck != stranded {
						t.Errorf("state=%s paused=%v silent=%v: a queued job stuck = %v, its queue stranded = %v", state, paused, silent, stuck, stranded)
					}
					u := UnreachableClusters([]Cluster{*c}, now)
					if listed := len(u.Disabled)+len(u.Pending)+len(u.Silent) == 1; listed != stranded {
						t.Errorf("state=%s paused=%v silent=%v: in the stuck queries' clusters = %v, its queue stranded = %v", state, paused, silent, listed, stranded)
					}
				}
			}
		}
	}
}
