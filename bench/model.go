package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// model prints the capacity model (issue 33): two serve replicas on this
// machine share its cores with PostgreSQL and the agents, so they cannot add
// throughput; what they would reach on machines of their own follows from the
// CPU each part spends per lifecycle (BenchmarkReplicasPostgres). With cores
// per machine as here, R replicas on machines of their own and one database
// reach min(R*cores/serve, cores/postgres) lifecycles/s (the agents on
// machines of their own too). On this machine everything shares the cores:
// cores/(serve+postgres+agents), which the measured 1- and 2-replica runs
// check.
func model(w io.Writer, root string, values map[string][]float64) {
	fmt.Fprintf(w, "\nRiver %s ran (bench/river/go.mod).\n", riverVersion(root))
	get := func(unit string) (float64, bool) {
		vs := values["BenchmarkReplicasPostgres "+unit]
		if len(vs) == 0 {
			return 0, false
		}
		return median(vs), true
	}
	serve, ok1 := get("serve-cpu-ms/lifecycle")
	pg, ok2 := get("pg-cpu-ms/lifecycle")
	agents, ok3 := get("agent-cpu-ms/lifecycle")
	one, ok4 := get("one-replica-lifecycles/s")
	two, ok5 := get("lifecycles/s")
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || serve <= 0 || pg <= 0 {
		fmt.Fprintln(w, "\ncapacity model: not computed (BenchmarkReplicasPostgres gave no CPU figures; it needs "+dsnEnv+")")
		return
	}
	cores := float64(runtime.NumCPU())
	fmt.Fprintf(w, "\ncapacity model (PostgreSQL; CPU per lifecycle: serve %.3f ms, PostgreSQL backends %.3f ms, agents %.3f ms; %g cores a machine):\n", serve, pg, agents, cores)
	for _, r := range []float64{1, 2, 4, 8} {
		rs, db := r*cores*1000/serve, cores*1000/pg
		bound := "the replicas"
		if db < rs {
			bound = "the database"
		}
		fmt.Fprintf(w, "  %g replica(s), each on a machine of its own: ceiling %.0f lifecycles/s (bound by %s)\n", r, min(rs, db), bound)
	}
	shared := cores * 1000 / (serve + pg + agents)
	fmt.Fprintf(w, "  check, everything on this machine: model %.0f lifecycles/s; measured one replica %.0f (%.2f of the model), two %.0f (%.2f)\n",
		shared, one, one/shared, two, two/shared)
}

// riverVersion is the River version bench/river requires.
func riverVersion(root string) string {
	mod, _ := os.ReadFile(filepath.Join(root, "bench", "river", "go.mod"))
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/riverqueue/river" {
			return f[1]
		}
	}
	return "(version unknown)"
}
