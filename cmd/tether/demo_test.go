package main

import (
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

var demoLine = regexp.MustCompile(`clusters (\d+) active/(\d+) .* done (\d+) `)

// TestDemoHeadless runs the real binary's demo: its simulated agents register
// over HTTP and finish jobs, and SIGINT stops it cleanly.
func TestDemoHeadless(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	p := start(t, db, "demo", "--headless", "--rate", "5", "--clusters", "4")
	eventually(t, "every simulated cluster to register and jobs to finish", func() bool {
		m := demoLine.FindAllStringSubmatch(p.stdout.String(), -1)
		if len(m) == 0 {
			return false
		}
		last := m[len(m)-1]
		done, _ := strconv.Atoi(last[3])
		return last[1] == "4" && last[2] == "4" && done > 0
	})
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if res := p.wait(t); res.code != exitOK {
		t.Fatalf("demo after SIGINT: %s", res)
	}
	// --db was given: the demo's database stays for inspection.
	if res := ok(t, db, "cluster", "list"); !regexp.MustCompile(`prod-eu-1`).MatchString(res.stdout) {
		t.Fatalf("the demo's clusters are not in %s:\n%s", db, res.stdout)
	}
}
