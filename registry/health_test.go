package registry

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3 * time.Second}, 3 * time.Second},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{4, 1, 2, 8}, 3},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestQueueHealthJSON: the derived figures are in the JSON form (null when
// unknown), and it reads back into the same value.
func TestQueueHealthJSON(t *testing.T) {
	at := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	h := QueueHealth{ClusterID: "c", At: at, Queued: 3, OldestQueuedAt: at.Add(-90 * time.Second),
		WaitP50: 1500 * time.Millisecond, WaitSamples: 4, Finished: 4, Failed: 1}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"oldestQueuedSeconds":90`, `"waitP50Seconds":1.5`, `"failureRate":0.25`, `"notDraining":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back QueueHealth
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != h {
		t.Errorf("read back %+v, want %+v", back, h)
	}
	b, _ = json.Marshal(QueueHealth{ClusterID: "c", At: at})
	for _, want := range []string{`"oldestQueuedSeconds":null`, `"waitP50Seconds":null`, `"failureRate":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
