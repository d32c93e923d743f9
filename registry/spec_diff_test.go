package registry

import (
	"reflect"
	"testing"
)

// TestDiffClusterSpec: the one spec diff names every field an edit
// changed, labels included, and the audit trail words it as it always has.
func TestDiffClusterSpec(t *testing.T) {
	old := ClusterSpec{Name: "eu", Labels: Labels{"env": "prod"}, AllowedNamespaces: []string{"web"}}
	old.Policy.LeaseSeconds = 30
	if got := DiffClusterSpec(&old, &old); len(got) != 0 {
		t.Errorf("an unchanged spec differs: %+v", got)
	}
	empty := old
	empty.AllowedNamespaces, empty.Labels = []string{}, Labels{}
	was := old
	was.AllowedNamespaces, was.Labels = nil, nil
	if got := DiffClusterSpec(&was, &empty); len(got) != 0 {
		t.Errorf("nil and empty lists and labels differ: %+v", got)
	}

	labels := old
	labels.Labels = Labels{"env": "prod", "tier": "gold"}
	want := []SpecChange{{Field: "labels", From: old.Labels, To: labels.Labels}}
	if got := DiffClusterSpec(&old, &labels); !reflect.DeepEqual(got, want) {
		t.Errorf("a label-only edit: %+v, want %+v", got, want)
	}
	if got := describeSpecChange(&old, &labels); got != "labels {env=prod} -> {env=prod,tier=gold}" {
		t.Errorf("audit text %q", got)
	}

	edit := labels
	edit.AllowedNamespaces = []string{"web", "batch"}
	edit.Policy.LeaseSeconds = 60
	if got := describeSpecChange(&old, &edit); got != "labels {env=prod} -> {env=prod,tier=gold}; namespaces [web] -> [web batch]; leaseSeconds 30 -> 60" {
		t.Errorf("audit text %q", got)
	}
	if got := describeSpecChange(&old, &old); got != "no change" {
		t.Errorf("audit text of no change %q", got)
	}
}
