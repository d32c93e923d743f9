package benchresult

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a results file is the rows as written, their figures cut to
// four significant digits, under bench/results of the root.
func TestWrite(t *testing.T) {
	root := t.TempDir()
	rows := []Result{{Scenario: "wake-up p99", Value: Round(12.34567), Unit: "p99-ms", Target: "< 50 ms", OK: true, Runs: 3}}
	path, err := Write(root, "latest.json", rows)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "bench", "results", "latest.json"); path != want {
		t.Fatalf("written to %s, want %s", path, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []Result
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got[0] != (Result{"wake-up p99", 12.35, "p99-ms", "< 50 ms", true, 3}) {
		t.Fatalf("the file reads back as %+v (%v):\n%s", got, err, b)
	}
}
