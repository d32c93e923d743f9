// Command bench runs tether's benchmarks with targets (make bench): each
// scenario several times, on this machine, side by side where a ratio is the
// target. It prints one table of medians next to their targets and writes
// them to bench/results/latest.json (output, not committed).
//
// The scenarios are ordinary Go benchmarks, runnable one by one with go test:
//
//	lifecycle  ./bench         BenchmarkLifecycle, BenchmarkLifecycleMillion,
//	                           BenchmarkLifecycleAgents, BenchmarkLifecyclePostgres
//	replicas   ./bench         BenchmarkReplicasPostgres
//	River      ./bench/river   BenchmarkRiver, BenchmarkPeers (tether beside River bridged to
//	                           the agent protocol; a module of its own: cd bench/river)
//	wake-up    ./bench         BenchmarkWakeup (also the fan-in memory)
//	reaper     ./store/sqlite  BenchmarkStore/Reap (storetest's benchmark suite; also ./store/postgres)
//	submit     ./store/sqlite  BenchmarkStore/Submit, /Claim, /IdleLook, /BusyLook, /Heartbeat
//	console    ./tui           BenchmarkJobsFrame, BenchmarkFirstFrame, BenchmarkJobsFilter
//	           ./bench         BenchmarkConsole (the binary as launched, in a pseudo terminal)
//	SSH        ./sshconsole    BenchmarkSSHKeyLatency, BenchmarkSSHSessionMemory
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tetherhq/tether/bench/internal/benchresult"
)

// run is one go test invocation, in the module at dir (relative to tether's
// root; "" for tether's own).
type run struct {
	title string
	dir   string
	pkg   string
	bench string
	args  []string
	count int
}

var runs = []run{
	{"lifecycle (32 apiclient agents, and the same client against a trivial handler)", "", "./bench", "^BenchmarkLifecycle$", []string{"-benchtime", "4000x"}, 3},
	{"lifecycle with 1,000,000 jobs in the database, and on an empty one", "", "./bench", "^BenchmarkLifecycleMillion$", []string{"-benchtime", "4000x"}, 3},
	{"lifecycle with 8, 32 and 128 agents", "", "./bench", "^BenchmarkLifecycleAgents$", []string{"-benchtime", "4000x"}, 1},
	{"lifecycle on PostgreSQL (needs " + dsnEnv + ")", "", "./bench", "^BenchmarkLifecyclePostgres$", []string{"-benchtime", "4000x"}, 3},
	{"two replicas on PostgreSQL, and one (64 agents; needs " + dsnEnv + ")", "", "./bench", "^BenchmarkReplicasPostgres$", []string{"-benchtime", "4000x"}, 3},
	{"River in-process on the same PostgreSQL (needs " + dsnEnv + ")", "bench/river", ".", "^BenchmarkRiver$", []string{"-benchtime", "4000x"}, 3},
	{"tether beside River bridged to the protocol, on SQLite and on PostgreSQL (PostgreSQL needs " + dsnEnv + ")", "bench/river", ".", "^BenchmarkPeers$", []string{"-benchtime", "4000x"}, 3},
	{"wake-up and fan-in (tether serve in its own process; 1,000 and 10,000 held polls)", "", "./bench", "^BenchmarkWakeup$", []string{"-benchtime", "200x"}, 3},
	{"admin API: submissions over HTTP (32 producers, policy checks)", "", "./bench", "^BenchmarkAdminSubmit$", []string{"-benchtime", "10000x"}, 3},
	{"admin API: watch fan-out (100 watchers, 100 jobs/s)", "", "./bench", "^BenchmarkWatchFanout$", []string{"-benchtime", "500x"}, 3},
	{"admin API: blocking submit over an idle agent", "", "./bench", "^BenchmarkBlockingSubmit$", []string{"-benchtime", "1000x"}, 3},
	{"reaper (100,000 expired leases)", "", "./store/sqlite", "^BenchmarkStore$/^Reap$", []string{"-benchtime", "1x"}, 3},
	{"submit, claim, looks and heartbeats (registry on SQLite, concurrent callers)", "", "./store/sqlite", "^BenchmarkStore$/^(Submit|Claim|IdleLook|BusyLook|Heartbeat)$", []string{"-benchtime", "30000x"}, 3},
	{"console (jobs view over 1,000,000 jobs)", "", "./tui", "^Benchmark(JobsFrame|FirstFrame|JobsFilter)$", nil, 3},
	{"console as launched (tether console in a pseudo terminal over 1,000,000 jobs; PostgreSQL needs " + dsnEnv + ")", "", "./bench", "^BenchmarkConsole$", []string{"-benchtime", "1x"}, 3},
	{"console over SSH on loopback: key latency", "", "./sshconsole", "^BenchmarkSSHKeyLatency$", []string{"-benchtime", "200x"}, 3},
	{"console over SSH on loopback: memory of 16 open sessions", "", "./sshconsole", "^BenchmarkSSHSessionMemory$", []string{"-benchtime", "1x"}, 3},
}

// dsnEnv names the variable the PostgreSQL scenarios need (they skip without it).
const dsnEnv = "TETHER_TEST_POSTGRES_DSN"

// row is one line of the table: a metric of a benchmark, and its target.
type row struct {
	scenario string
	bench    string // benchmark name without the -GOMAXPROCS suffix
	unit     string // as the benchmark reports it
	target   string // "" for figures reported for information
	ok       func(float64) bool
	postgres bool // skipped, and said so, without TETHER_TEST_POSTGRES_DSN
}

func atLeast(v float64) func(float64) bool { return func(x float64) bool { return x >= v } }
func above(v float64) func(float64) bool   { return func(x float64) bool { return x > v } }
func below(v float64) func(float64) bool   { return func(x float64) bool { return x < v } }
func atMost(v float64) func(float64) bool  { return func(x float64) bool { return x <= v } }

var rows = []row{
	{"peer: tether on SQLite / the faster River bridge", "BenchmarkPeers", "sqlite-bridge-ratio", ">= 2.0", atLeast(2), true},
	{"peer: tether on PostgreSQL / River bridged on PostgreSQL", "BenchmarkPeers", "pg-bridge-ratio", ">= 1.0", atLeast(1), true},
	{"peer: tether on SQLite / trivial handler (the physical limit)", "BenchmarkPeers", "sqlite-baseline-ratio", "", nil, false},
	{"peer: tether on SQLite / River bridged on SQLite", "BenchmarkPeers", "sqlite-bridge-sqlite-ratio", "", nil, false},
	{"peer: PostgreSQL commits per lifecycle, tether", "BenchmarkPeers", "pg-commits/lifecycle", "<= 1.0", atMost(1), true},
	{"peer: PostgreSQL commits per lifecycle, River bridged", "BenchmarkPeers", "bridge-pg-commits/lifecycle", "", nil, true},
	{"peer: PostgreSQL backends' CPU per lifecycle, tether / River bridged", "BenchmarkPeers", "pg-cpu-ratio", "<= 1.0", atMost(1), true},
	{"peer: PostgreSQL backends' CPU per lifecycle, tether", "BenchmarkPeers", "pg-cpu-ms/lifecycle", "", nil, true},
	{"peer: PostgreSQL backends' CPU per lifecycle, River bridged", "BenchmarkPeers", "bridge-pg-cpu-ms/lifecycle", "", nil, true},
	{"peer: CPU per lifecycle, tether on SQLite (one process: HTTP, registry, SQLite, agents)", "BenchmarkPeers", "sqlite-cpu-ms/lifecycle", "", nil, false},
	{"peer: CPU per lifecycle, River bridged on SQLite (the same)", "BenchmarkPeers", "bridge-sqlite-cpu-ms/lifecycle", "", nil, false},
	{"peer: CPU per lifecycle, trivial handler and agents", "BenchmarkPeers", "baseline-cpu-ms/lifecycle", "", nil, false},
	{"peer: Go side's CPU per lifecycle, tether on PostgreSQL", "BenchmarkPeers", "pg-go-cpu-ms/lifecycle", "", nil, true},
	{"peer: Go side's CPU per lifecycle, River bridged on PostgreSQL", "BenchmarkPeers", "bridge-pg-go-cpu-ms/lifecycle", "", nil, true},
	{"peer: tether on SQLite", "BenchmarkPeers", "sqlite-lifecycles/s", "", nil, false},
	{"peer: River bridged on SQLite (riversqlite, fetch cooldown 5 ms)", "BenchmarkPeers", "bridge-sqlite-lifecycles/s", "", nil, false},
	{"peer: tether on PostgreSQL", "BenchmarkPeers", "pg-lifecycles/s", "", nil, true},
	{"peer: River bridged on PostgreSQL (riverpgxv5, fetch cooldown 5 ms)", "BenchmarkPeers", "bridge-pg-lifecycles/s", "", nil, true},
	{"peer: trivial handler", "BenchmarkPeers", "baseline-lifecycles/s", "", nil, false},
	// The durable bridge answers each request once it is on disk, as tether
	// does (bench/river/bridge_test.go); the rows above are against the
	// bridge that answers an ack, a status and a result from memory.
	{"peer, durable bridge: tether on SQLite / the faster durable bridge", "BenchmarkPeers", "sqlite-durable-ratio", "", nil, true},
	{"peer, durable bridge: tether on PostgreSQL / the durable bridge on PostgreSQL", "BenchmarkPeers", "pg-durable-ratio", "", nil, true},
	{"peer, durable bridge: tether on SQLite / the durable bridge on SQLite", "BenchmarkPeers", "sqlite-durable-sqlite-ratio", "", nil, false},
	{"peer, durable bridge: PostgreSQL backends' CPU per lifecycle, tether / durable bridge", "BenchmarkPeers", "pg-durable-cpu-ratio", "", nil, true},
	{"peer, durable bridge: PostgreSQL commits per lifecycle", "BenchmarkPeers", "durable-pg-commits/lifecycle", "", nil, true},
	{"peer, durable bridge: PostgreSQL backends' CPU per lifecycle", "BenchmarkPeers", "durable-pg-cpu-ms/lifecycle", "", nil, true},
	{"peer, durable bridge: CPU per lifecycle on SQLite (one process, as above)", "BenchmarkPeers", "durable-sqlite-cpu-ms/lifecycle", "", nil, false},
	{"peer, durable bridge: Go side's CPU per lifecycle on PostgreSQL", "BenchmarkPeers", "durable-pg-go-cpu-ms/lifecycle", "", nil, true},
	{"peer, durable bridge on SQLite", "BenchmarkPeers", "durable-sqlite-lifecycles/s", "", nil, false},
	{"peer, durable bridge on PostgreSQL", "BenchmarkPeers", "durable-pg-lifecycles/s", "", nil, true},
	{"lifecycle: tether / trivial handler", "BenchmarkLifecycle", "ratio", "", nil, false},
	{"lifecycle: tether", "BenchmarkLifecycle", "lifecycles/s", "", nil, false},
	{"lifecycle: trivial handler", "BenchmarkLifecycle", "baseline-lifecycles/s", "", nil, false},
	{"lifecycle: enqueue to ack p50", "BenchmarkLifecycle", "enqueue-ack-p50-ms", "", nil, false},
	{"lifecycle: enqueue to ack p99", "BenchmarkLifecycle", "enqueue-ack-p99-ms", "", nil, false},
	{"lifecycle: 1,000,000 jobs / empty database", "BenchmarkLifecycleMillion", "ratio", ">= 0.9", atLeast(0.9), false},
	{"lifecycle: 8 agents", "BenchmarkLifecycleAgents/agents=8", "lifecycles/s", "", nil, false},
	{"lifecycle: 32 agents", "BenchmarkLifecycleAgents/agents=32", "lifecycles/s", "", nil, false},
	{"lifecycle: 128 agents", "BenchmarkLifecycleAgents/agents=128", "lifecycles/s", "", nil, false},
	{"lifecycle on PostgreSQL", "BenchmarkLifecyclePostgres", "lifecycles/s", "", nil, true},
	{"PostgreSQL: two replicas / one on one machine (64 agents; the capacity model below)", "BenchmarkReplicasPostgres", "ratio", "", nil, true},
	{"PostgreSQL, one replica: serve's CPU per lifecycle", "BenchmarkReplicasPostgres", "serve-cpu-ms/lifecycle", "", nil, true},
	{"PostgreSQL, one replica: the backends' CPU per lifecycle", "BenchmarkReplicasPostgres", "pg-cpu-ms/lifecycle", "", nil, true},
	{"PostgreSQL, one replica: the agents' CPU per lifecycle", "BenchmarkReplicasPostgres", "agent-cpu-ms/lifecycle", "", nil, true},
	{"PostgreSQL, one replica: commits per lifecycle (64 agents)", "BenchmarkReplicasPostgres", "pg-commits/lifecycle", "", nil, true},
	{"River in-process on PostgreSQL (one insert at a time, no-op worker, fetch cooldown 5 ms)", "BenchmarkRiver", "jobs/s", "", nil, true},
	{"wake-up p50, 1,000 held polls", "BenchmarkWakeup/polls=1000", "p50-ms", "", nil, false},
	{"wake-up p99, 1,000 held polls", "BenchmarkWakeup/polls=1000", "p99-ms", "", nil, false},
	{"wake-up p50, 10,000 held polls", "BenchmarkWakeup/polls=10000", "p50-ms", "", nil, false},
	{"wake-up p99, 10,000 held polls", "BenchmarkWakeup/polls=10000", "p99-ms", "< 50 ms", below(50), false},
	{"fan-in: memory per held poll at 1,000", "BenchmarkWakeup/polls=1000", "KiB/poll", "", nil, false},
	{"fan-in: memory per held poll at 10,000", "BenchmarkWakeup/polls=10000", "KiB/poll", "<= 20 KiB", atMost(20), false},
	{"admin API: submissions over HTTP", "BenchmarkAdminSubmit", "submits/s", ">= 5000/s", atLeast(5000), false},
	{"watch: fan-out lag p50, 100 watchers", "BenchmarkWatchFanout", "lag-p50-ms", "", nil, false},
	{"watch: fan-out lag p99, 100 watchers", "BenchmarkWatchFanout", "lag-p99-ms", "< 50 ms", below(50), false},
	{"blocking submit round trip p50, idle agent", "BenchmarkBlockingSubmit", "rtt-p50-ms", "< 20 ms", below(20), false},
	{"blocking submit round trip p99, idle agent", "BenchmarkBlockingSubmit", "rtt-p99-ms", "", nil, false},
	{"reaper: 100,000 expired leases requeued", "BenchmarkStore/Reap", "s/100k", "< 2 s", below(2), false},
	{"submit: jobs through the registry", "BenchmarkStore/Submit", "submits/s", ">= 10000/s", atLeast(10000), false},
	{"claim: acks through the registry", "BenchmarkStore/Claim", "claims/s", "", nil, false},
	{"idle look: polls of an empty queue through the registry", "BenchmarkStore/IdleLook", "looks/s", "", nil, false},
	{"busy look: polls that each hand out a job of a backlog", "BenchmarkStore/BusyLook", "looks/s", "", nil, false},
	{"lease heartbeats through the registry (1,000 leased jobs)", "BenchmarkStore/Heartbeat", "heartbeats/s", "", nil, false},
	{"console: jobs-view frame, clock tick", "BenchmarkJobsFrame/tick", "ms/frame", "< 16 ms", below(16), false},
	{"console: jobs-view frame, key press", "BenchmarkJobsFrame/key", "ms/frame", "< 16 ms", below(16), false},
	{"console: first frame", "BenchmarkFirstFrame", "ms/first-frame", "< 300 ms", below(300), false},
	{"console: filter by a state, first page", "BenchmarkJobsFilter/state", "ms/filter", "< 100 ms", below(100), false},
	{"console: filter out states (!failed), first page", "BenchmarkJobsFilter/not_a_state", "ms/filter", "< 100 ms", below(100), false},
	{"console: filter by a cluster and a state, first page", "BenchmarkJobsFilter/cluster_and_state", "ms/filter", "< 100 ms", below(100), false},
	{"console: filter by a cluster, first page", "BenchmarkJobsFilter/cluster", "ms/filter", "< 100 ms", below(100), false},
	{"console: filter by words, first page", "BenchmarkJobsFilter/words", "ms/filter", "< 100 ms", below(100), false},
	{"console: filter by a rare word (app-99999: 11 of 1,000,000 jobs), first page", "BenchmarkJobsFilter/rare_word", "ms/filter", "< 100 ms", below(100), false},
	{"console launched: first frame with rows, 1,000,000 jobs", "BenchmarkConsole/sqlite", "ms/first-frame", "< 300 ms", below(300), false},
	{"console launched: resident memory after every view, 1,000,000 jobs", "BenchmarkConsole/sqlite", "MB-rss", "< 150 MB", below(150), false},
	{"console launched: plain-word filter (app-12345), first page", "BenchmarkConsole/sqlite", "ms/word-filter", "< 100 ms", below(100), false},
	{"console launched on PostgreSQL: first frame with rows, 1,000,000 jobs", "BenchmarkConsole/postgres", "ms/first-frame", "< 300 ms", below(300), true},
	{"console launched on PostgreSQL: resident memory after every view", "BenchmarkConsole/postgres", "MB-rss", "< 150 MB", below(150), true},
	{"console launched on PostgreSQL: plain-word filter (app-12345), first page", "BenchmarkConsole/postgres", "ms/word-filter", "< 100 ms", below(100), true},
	{"console over SSH: key to frame p50, loopback", "BenchmarkSSHKeyLatency", "key-p50-ms", "", nil, false},
	{"console over SSH: key to frame p99, loopback", "BenchmarkSSHKeyLatency", "key-p99-ms", "< 30 ms", below(30), false},
	{"console over SSH: memory per open session", "BenchmarkSSHSessionMemory", "MiB/session", "< 10 MiB", below(10), false},
}

// result is one entry of bench/results/latest.json.
type result = benchresult.Result

func main() {
	only := flag.String("only", "", "run only the scenarios whose benchmark pattern matches this regular expression (e.g. 'Peers|Replicas'); the other rows say they were not selected")
	flag.Parse()
	sel, err := regexp.Compile(*only)
	if err != nil {
		fail(fmt.Errorf("-only: %w", err))
	}
	root, err := benchresult.ModuleRoot("make bench")
	if err != nil {
		fail(err)
	}
	start := time.Now()
	values := map[string][]float64{} // bench + " " + unit -> one value per run
	var stopped error                // the scenario that could not measure, if one could not
	for _, r := range runs {
		if !sel.MatchString(r.bench) {
			continue
		}
		selected = append(selected, r)
		fmt.Fprintf(os.Stderr, "bench: %s, %d runs ...\n", r.title, r.count)
		t0 := time.Now()
		out, err := goTest(root, r)
		got := parse(out)
		if err != nil {
			// A scenario whose go test fails but that reported figures
			// counts them (a figure over its target is a MISSED row, not a
			// failure); one that measured nothing stops the run, and the
			// rows measured so far are still printed and written.
			fmt.Fprintf(os.Stderr, "%s\n", failures(out))
			if len(got) == 0 {
				stopped = fmt.Errorf("%s: %w: it measured nothing, so the run stops here", r.title, err)
				break
			}
		}
		for k, v := range got {
			values[k] = append(values[k], v...)
		}
		fmt.Fprintf(os.Stderr, "bench:   done in %s\n", time.Since(t0).Round(time.Second))
	}

	results, _, skipped, absent := table(os.Stdout, values, stopped != nil)
	model(os.Stdout, root, values)

	path, err := benchresult.Write(root, "latest.json", results)
	if err != nil {
		fail(err)
	}
	fmt.Printf("\n%d of %d targets met (%d skipped or not selected; %d rows not measured); medians of each scenario's runs, measured on this machine in %s. Written to %s.\n",
		met(results), countTargets()-skipped, skipped, absent, time.Since(start).Round(time.Second), path)
	switch {
	case stopped != nil:
		fail(stopped)
	case absent > 0:
		fail(fmt.Errorf("%d rows have no figure: their scenarios ran but did not report them", absent))
	}
}

// table prints one line per row and returns the rows with a figure, how
// many targets were missed or skipped (no PostgreSQL, or not selected), and
// how many rows, targets or not, were not measured.
func table(w io.Writer, values map[string][]float64, stopped bool) (results []result, missed, skipped, absent int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMEDIAN\tUNIT\tTARGET\tOK\tRUNS")
	for _, r := range rows {
		vs := values[r.bench+" "+r.unit]
		if len(vs) == 0 {
			why := "NOT MEASURED: no figure"
			switch {
			case !isSelected(r.bench):
				why = "not selected (-only)"
				if r.ok != nil {
					skipped++
				}
			case r.postgres && os.Getenv(dsnEnv) == "":
				why = "skipped: " + dsnEnv + " is not set"
				if r.ok != nil {
					skipped++
				}
			case stopped:
				why = "NOT MEASURED: the run stopped before it"
				absent++
			default:
				absent++
			}
			fmt.Fprintf(tw, "%s\t-\t%s\t%s\t%s\t0\n", r.scenario, r.unit, dash(r.target), why)
			continue
		}
		v := median(vs)
		res := result{Scenario: r.scenario, Value: benchresult.Round(v), Unit: r.unit, Target: r.target, OK: true, Runs: len(vs)}
		mark := ""
		if r.ok != nil {
			res.OK = r.ok(v)
			mark = "ok"
			if !res.OK {
				mark, missed = "MISSED", missed+1
			}
		}
		results = append(results, res)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", r.scenario, strconv.FormatFloat(res.Value, 'f', -1, 64), r.unit, dash(r.target), mark, len(vs))
	}
	tw.Flush()
	return results, missed, skipped, absent
}

// selected are the scenarios this run runs (-only).
var selected []run

// isSelected says whether a selected scenario reports bench (a name as the
// table has it, "BenchmarkX/sub" for a sub-benchmark).
func isSelected(bench string) bool {
	top, _, _ := strings.Cut(bench, "/")
	for _, r := range selected {
		if ok, _ := regexp.MatchString(r.bench, top); ok {
			return true
		}
	}
	return false
}

// met counts the results that have a target and meet it.
func met(results []result) int {
	n := 0
	for _, r := range results {
		if r.Target != "" && r.OK {
			n++
		}
	}
	return n
}

func countTargets() int {
	n := 0
	for _, r := range rows {
		if r.ok != nil {
			n++
		}
	}
	return n
}

func goTest(root string, r run) ([]byte, error) {
	args := append([]string{"test", "-run", "^$", "-bench", r.bench, "-count", strconv.Itoa(r.count), "-timeout", "20m"}, r.args...)
	cmd := exec.Command("go", append(args, r.pkg)...)
	cmd.Dir = filepath.Join(root, r.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// parse reads benchmark lines: "BenchmarkX/sub-2  N  v unit  v unit ...".
func parse(out []byte) map[string][]float64 {
	values := map[string][]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			values[name+" "+f[i+1]] = append(values[name+" "+f[i+1]], v)
		}
	}
	return values
}

// failures keeps the lines of go test's output that say what failed.
func failures(out []byte) string {
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "FAIL") || strings.Contains(line, "_test.go:") || strings.Contains(line, "panic") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
