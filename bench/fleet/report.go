package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tetherhq/tether/bench/internal/benchresult"
)

// result is one entry of bench/results/fleet.json: latest.json's format
// (bench/main.go).
type result = benchresult.Result

type reportInput struct {
	o                            options
	agents                       int
	scaled                       string
	idleRSS                      int64
	mem                          *memory
	counts                       *counters
	heartbeatsSent, heartbeatsOK int64
	arrivals                     *arrivals
	frame                        consoleFrame
	load                         string
	took                         time.Duration
	gauge                        int // serve's held-polls gauge at the end
	split                        wakeSplit
	probe                        *schedProbe
}

func report(root string, in reportInput) error {
	rss, fewest := in.mem.steady()
	in.arrivals.mu.Lock()
	lat := slices.Clone(in.arrivals.latencies)
	undelivered := len(in.arrivals.submitted)
	in.arrivals.mu.Unlock()
	slices.Sort(lat)
	pct := func(p int) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, len(lat)*p/100)].Microseconds()) / 1000
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	missedBeats := in.heartbeatsSent - in.heartbeatsOK

	var results []result
	add := func(scenario string, v float64, unit, target string, ok *bool) {
		r := result{Scenario: scenario, Value: benchresult.Round(v), Unit: unit, Target: target, OK: true, Runs: 1}
		if ok != nil {
			r.OK = *ok
		}
		results = append(results, r)
	}
	b := func(v bool) *bool { return &v }
	fleet := fmt.Sprintf("fleet of %d agents", in.agents)
	add(fleet+": agents", float64(in.agents), "agents", "", nil)
	add(fleet+": serve resident memory, polls held", mib(rss), "MiB", "<= 1024 MiB", b(rss > 0 && rss <= 1<<30))
	add(fleet+": serve resident memory, peak", mib(in.mem.peakRSS), "MiB", "", nil)
	add(fleet+": memory per held poll", float64(rss-in.idleRSS)/float64(in.agents)/1024, "KiB/poll", "", nil)
	add(fleet+": fewest polls outstanding in a sample", float64(fewest), "polls", "", nil)
	add(fleet+": polls held by serve's gauge, at the end", float64(in.gauge), "polls", "", nil)
	add(fleet+": jobs delivered", float64(len(lat)), "jobs", "", nil)
	add(fleet+": jobs submitted, not delivered by the end", float64(undelivered), "jobs", "", nil)
	add(fleet+": submissions that found the database locked", float64(in.arrivals.refused.Load()), "jobs", "", nil)
	add(fleet+": jobs per second", float64(len(lat))/in.o.steady.Seconds(), "jobs/s", "", nil)
	add(fleet+": wake-up p50", pct(50), "p50-ms", "", nil)
	add(fleet+": wake-up p99", pct(99), "p99-ms", "< 50 ms", b(len(lat) > 0 && pct(99) < 50))
	msf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	if sp := in.split; sp.matched > 0 {
		add(fleet+": wake-up p99, commit to serve's look (notice)", msf(sp.noticeP99), "p99-ms", "", nil)
		add(fleet+": wake-up p99, serve's look to arrival (deliver)", msf(sp.deliverP99), "p99-ms", "", nil)
	}
	sched50, sched99, schedMax := in.probe.percentiles()
	add(fleet+": the agents' process, own scheduling delay p99", msf(sched99), "p99-ms", "", nil)
	add(fleet+": heartbeats sent", float64(in.heartbeatsSent), "heartbeats", "", nil)
	add(fleet+": heartbeats not answered 204", float64(missedBeats), "heartbeats", "0", b(in.heartbeatsSent > 0 && missedBeats == 0))
	add(fleet+": polls refused or cut off", float64(in.counts.pollErrors.Load()), "polls", "", nil)
	add(fleet+": console first frame", in.frame.ms, "ms/first-frame", "< 300 ms", b(in.frame.ms > 0 && in.frame.ms < 300))

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVALUE\tUNIT\tTARGET\tOK")
	missed, targets := 0, 0
	for _, r := range results {
		mark := ""
		if r.Target != "" {
			targets++
			mark = "ok"
			if !r.OK {
				mark = "MISSED"
				missed++
			}
		}
		t := r.Target
		if t == "" {
			t = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Scenario, strconv.FormatFloat(r.Value, 'f', -1, 64), r.Unit, t, mark)
	}
	tw.Flush()
	if sp := in.split; sp.matched > 0 {
		fmt.Printf("\nwake-ups split at serve's look (%d of %d jobs): notice p50 %s, p99 %s; deliver p50 %s, p99 %s (the submitter's own commit, created to committed: p50 %s, p99 %s, max %s)\n",
			sp.matched, len(lat), sp.noticeP50, sp.noticeP99, sp.deliverP50, sp.deliverP99, sp.submitP50, sp.submitP99, sp.subWrst)
		fmt.Println("the slowest:")
		for _, w := range sp.worst {
			fmt.Println("  " + w)
		}
		fmt.Println("wake-ups per 10 s of the steady state, by commit:")
		for _, b := range sp.buckets {
			fmt.Println("  " + b)
		}
	}
	fmt.Printf("the agents' process, how late a 10 ms timer goroutine ran: p50 %s, p99 %s, max %s\n", sched50, sched99, schedMax)
	if in.frame.err != "" {
		fmt.Printf("\nconsole: no first frame measured: %s\n", in.frame.err)
	}
	if e, ok := in.counts.firstErr.Load().(string); ok {
		fmt.Printf("\nfirst error an agent met: %s\n", e)
	}
	if in.scaled != "" {
		fmt.Printf("\nscaled down: %s\n", in.scaled)
	}
	path, err := benchresult.Write(root, "fleet.json", results)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d of %d targets met; %d agents, %d jobs/s for %s, heartbeats every %s, in %s on this machine (load average %s). Written to %s.\n",
		targets-missed, targets, in.agents, in.o.rate, in.o.steady, in.o.heartbeat, in.took.Round(time.Second), in.load, path)
	return nil
}
