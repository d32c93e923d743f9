package tui

import "testing"

// esc after drilling from a cluster into its jobs (J) or events (E) goes
// back to the cluster, and leaves the list as it was before the drill; a
// filter typed by hand is still cleared by esc, as before (issue 12,
// defect 7).
func TestEscGoesBackFromADrill(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "2", "j", "j", "enter")
	d, ok := m.top().(*clusterDetail)
	if !ok {
		t.Fatalf("enter on a cluster opened %T", m.top())
	}
	for _, drill := range []string{"J", "E"} {
		do(m, drill)
		f, ok := m.top().(filterable)
		if !ok || f.Filter() != "cluster:prod-eu-1" {
			t.Fatalf("%s: top %T, filter %v", drill, m.top(), f)
		}
		do(m, "esc")
		if m.screen != screenClusters || m.top() != d {
			t.Fatalf("%s then esc: screen %d, top %T; want the cluster's detail", drill, m.screen, m.top())
		}
		if f.Filter() != "" {
			t.Errorf("%s then esc left the list filtered by %q", drill, f.Filter())
		}
	}
	// Not a drill: esc clears the filter and stays.
	do(m, "3")
	m.jobs.SetFilter("cluster:prod-us-1")
	do(m, "esc")
	if m.screen != screenJobs || m.jobs.Filter() != "" {
		t.Errorf("esc on a filter typed by hand: screen %d filter %q", m.screen, m.jobs.Filter())
	}
}
