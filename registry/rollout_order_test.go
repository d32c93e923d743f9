package registry

import (
	"slices"
	"testing"
)

// Targets ordered by a label: whole-number values first, as numbers (wave=2
// before wave=10), then other values as text, then clusters without the
// label.
func TestSortTargetsByLabel(t *testing.T) {
	clusters := []Cluster{
		{ID: "cl-1", ClusterSpec: ClusterSpec{Name: "ten", Labels: Labels{"wave": "10"}}},
		{ID: "cl-2", ClusterSpec: ClusterSpec{Name: "none"}},
		{ID: "cl-3", ClusterSpec: ClusterSpec{Name: "two", Labels: Labels{"wave": "2"}}},
		{ID: "cl-4", ClusterSpec: ClusterSpec{Name: "canary", Labels: Labels{"wave": "canary"}}},
		{ID: "cl-5", ClusterSpec: ClusterSpec{Name: "one", Labels: Labels{"wave": "1"}}},
		{ID: "cl-6", ClusterSpec: ClusterSpec{Name: "one-a", Labels: Labels{"wave": "1a"}}},
	}
	sortTargets(clusters, "wave")
	var got []string
	for _, c := range clusters {
		got = append(got, c.Name)
	}
	if want := []string{"one", "two", "ten", "one-a", "canary", "none"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
