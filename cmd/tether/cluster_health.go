package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tetherhq/tether/internal/humantime"
	"github.com/tetherhq/tether/registry"
)

// printQueueHealth shows a cluster's queue figures (registry.QueueHealth)
// under cluster get's "Queue:" heading.
func printQueueHealth(w io.Writer, now time.Time, q *registry.QueueHealth) error {
	fmt.Fprintln(w, "\nQueue:")
	kv := newKV(w)
	kv.row("  Oldest queued:", oldestQueuedText(now, q))
	kv.row("  Wait p50:", waitP50Text(q))
	kv.row("  Failure rate:", failureRateText(q))
	draining := "yes"
	switch {
	case q.NotDraining:
		draining = "NO: " + q.Reason
	case q.Queued == 0:
		draining = "yes (nothing queued)"
	}
	kv.row("  Draining:", draining)
	return kv.flush()
}

func oldestQueuedText(now time.Time, q *registry.QueueHealth) string {
	if q.OldestQueuedAt.IsZero() {
		return "none queued"
	}
	return fmt.Sprintf("submitted %s (%d queued, %d in flight)", ago(now, q.OldestQueuedAt), q.Queued, q.InFlight)
}

func waitP50Text(q *registry.QueueHealth) string {
	if q.WaitSamples == 0 {
		return "- (no claim in the last hour)"
	}
	return fmt.Sprintf("%s from submit to claim, over the last %d claims", humantime.Wait(q.WaitP50), q.WaitSamples)
}

func failureRateText(q *registry.QueueHealth) string {
	rate, ok := q.FailureRate()
	if !ok {
		return "- (no job submitted in the last hour has finished)"
	}
	return fmt.Sprintf("%s (%d failed or expired of %d finished, of the jobs submitted in the last hour)", percent(rate), q.Failed, q.Finished)
}

// percent renders a fraction as a whole percentage, keeping a small non-zero
// rate from reading as 0%.
func percent(rate float64) string {
	if rate > 0 && rate < 0.01 {
		return "<1%"
	}
	return strconv.Itoa(int(rate*100+0.5)) + "%"
}
