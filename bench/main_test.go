package main

import (
	"bytes"
	"strings"
	"testing"
)

// A figure over its target is a MISSED row, not a lost run; a row whose
// scenario never ran (the run stopped before it) says so, and every figure
// measured before is still in the table and the results.
func TestTableKeepsMissedAndMeasuredRows(t *testing.T) {
	t.Setenv(dsnEnv, "postgres://example")
	selected = runs
	t.Cleanup(func() { selected = nil })
	values := map[string][]float64{
		"BenchmarkFirstFrame ms/first-frame": {412, 398, 405}, // over its 300 ms target
		"BenchmarkLifecycle lifecycles/s":    {1000},
	}
	var out bytes.Buffer
	results, missed, _, absent := table(&out, values, true)
	lines := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.Index(l, "  "); i > 0 {
			lines[l[:i]] = l
		}
	}
	if l := lines["console: first frame"]; !strings.Contains(l, "405") || !strings.Contains(l, "MISSED") {
		t.Errorf("first frame row = %q, want its median 405 marked MISSED", l)
	}
	if l := lines["lifecycle: tether"]; !strings.Contains(l, "1000") {
		t.Errorf("lifecycle row = %q, want its figure", l)
	}
	if l := lines["console: jobs-view frame, clock tick"]; !strings.Contains(l, "NOT MEASURED: the run stopped before it") {
		t.Errorf("unmeasured row = %q, want it to say the run stopped before it", l)
	}
	if missed != 1 || absent == 0 || len(results) != 2 {
		t.Errorf("missed %d, absent %d, results %d: want 1 missed, the unmeasured targets counted, 2 results", missed, absent, len(results))
	}
}
