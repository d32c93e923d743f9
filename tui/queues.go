package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/internal/humantime"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// Queue health (registry.QueueHealth) for every view: the root reads it for
// the whole fleet in one call, when the console starts, soon after the job
// counts move, and every queuesEvery (the not-draining flag depends on the
// time); views read it from the fleet. The read is a few index ranges per
// cluster, done in a tea.Cmd, never in a frame.

// queuesEvery is how often queue health is re-read while nothing moves.
const queuesEvery = 5 * time.Second

// queuesAfterCounts is how soon after the job counts changed it is re-read
// (at most once per this interval on a busy fleet).
const queuesAfterCounts = time.Second

type queuesMsg struct {
	list []registry.QueueHealth
	err  error
}

// queueLoader schedules the reads.
type queueLoader struct {
	busy  bool
	dirty bool // the job counts moved since the last read
	last  time.Time
}

func (q *queueLoader) load(b Backend) tea.Cmd {
	q.busy, q.dirty, q.last = true, false, time.Now()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), storeReadTimeout)
		defer cancel()
		list, err := b.FleetQueueHealth(ctx)
		return queuesMsg{list: list, err: err}
	}
}

// due reports whether a tick should start a read.
func (q *queueLoader) due() bool {
	if q.busy {
		return false
	}
	since := time.Since(q.last)
	return since >= queuesEvery || (q.dirty && since >= queuesAfterCounts)
}

func (f *fleet) setQueues(list []registry.QueueHealth, err error) {
	f.queuesErr = err
	if err == nil {
		clear(f.queues)
		for _, q := range list {
			f.queues[q.ClusterID] = q
		}
		f.queuesLoaded = true
	}
	f.version++
}

// queue is a cluster's queue health, or nil before the first read.
func (f *fleet) queue(clusterID string) *registry.QueueHealth {
	q, ok := f.queues[clusterID]
	if !ok {
		return nil
	}
	return &q
}

// notDraining reports whether the cluster's queue is flagged.
func (f *fleet) notDraining(clusterID string) bool {
	q, ok := f.queues[clusterID]
	return ok && q.NotDraining
}

// notDrainingCount is how many clusters are flagged.
func (f *fleet) notDrainingCount() int {
	n := 0
	for _, q := range f.queues {
		if q.NotDraining && f.byID[q.ClusterID] != nil {
			n++
		}
	}
	return n
}

// busyQueues are the clusters whose queues have anything to say (jobs
// waiting or in flight, or jobs of the last hour), the not-draining ones
// first, then by the oldest wait, then by name.
func (f *fleet) busyQueues() []*registry.Cluster {
	var out []*registry.Cluster
	for _, c := range f.sorted {
		q, ok := f.queues[c.ID]
		if ok && (q.Queued > 0 || q.InFlight > 0 || q.Finished > 0 || q.WaitSamples > 0) {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *registry.Cluster) int {
		qa, qb := f.queues[a.ID], f.queues[b.ID]
		if qa.NotDraining != qb.NotDraining {
			if qa.NotDraining {
				return -1
			}
			return 1
		}
		return cmp.Compare(qb.OldestQueuedAge(), qa.OldestQueuedAge())
	})
	return out
}

// oldestText is how long the oldest queued job has waited ("-": none).
func oldestText(q *registry.QueueHealth) string {
	if q == nil || q.OldestQueuedAt.IsZero() {
		return "-"
	}
	return humantime.Duration(q.OldestQueuedAge())
}

// waitText is the median wait from submit to claim ("-": no claim in the
// window).
func waitText(q *registry.QueueHealth) string {
	if q == nil || q.WaitSamples == 0 {
		return "-"
	}
	return humantime.Wait(q.WaitP50)
}

// failText is the failure rate of the last hour as a percentage ("-":
// nothing finished).
func failText(q *registry.QueueHealth) string {
	if q == nil {
		return "-"
	}
	rate, ok := q.FailureRate()
	if !ok {
		return "-"
	}
	if rate > 0 && rate < 0.01 {
		return "<1%"
	}
	return strconv.Itoa(int(rate*100+0.5)) + "%"
}

// failKind colours a failure rate: any failure is worth a look, a fifth
// (the example alert's threshold) is bad.
func failKind(q *registry.QueueHealth) themes.Kind {
	rate, ok := q.FailureRate()
	switch {
	case !ok || rate == 0:
		return themes.Plain
	case rate >= 0.2:
		return themes.Danger
	}
	return themes.Warning
}

// failDetail spells the failure rate out: "20%: 1 failed or expired of 5
// finished".
func failDetail(q *registry.QueueHealth) string {
	if _, ok := q.FailureRate(); !ok {
		return "- (none has finished)"
	}
	return fmt.Sprintf("%s: %s failed or expired of %s finished", failText(q), thousands(q.Failed), thousands(q.Finished))
}

// renderQueue is the cluster detail's QUEUE section: the figures of
// registry.QueueHealth, spelled out.
func (d *clusterDetail) renderQueue(c *registry.Cluster, section func(string), field func(label, value string, k themes.Kind)) {
	f := d.ctx.Fleet
	section("QUEUE (jobs submitted in the last hour)")
	q := f.queue(c.ID)
	switch {
	case q == nil && f.queuesErr != nil:
		field("health", "could not read: "+errText(f.queuesErr), themes.Danger)
		return
	case q == nil:
		field("health", "loading…", themes.Muted)
		return
	}
	switch h := c.Health(d.ctx.Now, q); {
	case h == registry.HealthNotDraining:
		field("draining", "NO: the agent heartbeats but takes no work", themes.Danger)
	case q.Queued > 0 && h.Stranded():
		field("draining", "no: the cluster is "+string(h)+", so no agent takes its jobs", themes.Warning)
	case c.Paused():
		field("draining", "no: the queue is paused (p resumes it)", themes.Warning)
	case q.Queued == 0:
		field("draining", "yes: nothing queued", themes.Good)
	default:
		field("draining", "yes", themes.Good)
	}
	oldest, ok := "none queued", themes.Muted
	if !q.OldestQueuedAt.IsZero() {
		oldest = fmt.Sprintf("%s (since %sZ) · %s queued · %s in flight",
			oldestText(q), clock(q.OldestQueuedAt), thousands(q.Queued), thousands(q.InFlight))
		ok = themes.Plain
		if q.NotDraining {
			ok = themes.Danger
		}
	}
	field("oldest queued", oldest, ok)
	wait, wk := "- (no claim in the last hour)", themes.Muted
	if q.WaitSamples > 0 {
		wait, wk = fmt.Sprintf("%s from submit to claim (median of %d claims)", waitText(q), q.WaitSamples), themes.Plain
	}
	field("wait p50", wait, wk)
	fk := themes.Muted
	if _, known := q.FailureRate(); known {
		fk = failKind(q)
	}
	field("failure rate", failDetail(q), fk)
}
