package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// BenchmarkWakeup: `tether serve` runs as its own process while this process
// holds N long-polls (one per cluster, each with its own credential) and
// submits jobs to random clusters through the same database file: a second
// process, as the CLI or the console would. It reports the enqueue-to-delivery
// latency (from the submit's commit to the poll's answer arriving) and the
// server's resident memory per held poll.
//
// The benchmark raises this process's open-file limit to its hard limit: the
// client side holds one connection per poll, and so does the server, which
// inherits the limit.
func BenchmarkWakeup(b *testing.B) {
	for _, polls := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("polls=%d", polls), func(b *testing.B) { benchWakeup(b, polls) })
	}
}

func raiseOpenFiles(b *testing.B, need int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if int(lim.Cur) < need {
		b.Skipf("open-file hard limit %d is below the %d this scenario needs (raise it with ulimit -Hn)", lim.Cur, need)
	}
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// tetherBinary builds cmd/tether once per run.
func tetherBinary(b *testing.B) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tether-bench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "tether")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/tetherhq/tether/cmd/tether").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build tether: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binary
}

type fleetAgent struct {
	clusterID string
	bearer    string
}

// fleet creates n clusters with a registered agent each, directly in the
// database (in parallel, so that group commit batches them).
func fleet(b *testing.B, reg *registry.Registry, n int) []fleetAgent {
	agents := make([]fleetAgent, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: fmt.Sprintf("edge-%05d", i), AllowedNamespaces: []string{"default"}}, 0)
				if err != nil {
					b.Error(err)
					continue
				}
				cred, err := reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()})
				if err != nil {
					b.Error(err)
					continue
				}
				agents[i] = fleetAgent{clusterID: c.ID, bearer: cred.Token.Reveal()}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return agents
}

var addrPattern = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// startServe runs `tether serve` on the database and returns its address and
// process.
func startServe(b *testing.B, db string, extra ...string) (string, *exec.Cmd) {
	args := append([]string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--rate", "0", "--log-format", "json",
		"--max-polls-per-address", "0", "--max-conns-per-address", "0"}, extra...) // the whole fleet polls from 127.0.0.1
	cmd := exec.Command(tetherBinary(b), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if addr := addrPattern.FindString(lines.Text()); addr != "" && strings.Contains(lines.Text(), "serve listening") {
			var sink io.Writer = io.Discard
			if dir := os.Getenv("TETHER_BENCH_DIAG"); dir != "" {
				if f, err := os.Create(filepath.Join(dir, "serve.log")); err == nil {
					sink = f
				}
			}
			go io.Copy(sink, stderr)
			return addr, cmd
		}
	}
	b.Fatal("tether serve exited before saying where it listens")
	return "", nil
}

// rss is a process's resident set size in bytes.
func rss(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}

// heldPolls reads the server's held long-poll gauge from its --diag-listen
// address (the agent listener's /metrics takes an admin token).
func heldPolls(c *http.Client, base string) int {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "tether_agent_longpolls_held "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

func benchWakeup(b *testing.B, polls int) {
	raiseOpenFiles(b, polls+1000)
	dir := b.TempDir()
	db := filepath.Join(dir, "tether.db")
	st, err := sqlite.Open(admin, db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	defer reg.Close()
	agents := fleet(b, reg, polls)

	// serve's metrics are read on --diag-listen. TETHER_BENCH_DIAG=<dir>:
	// the heap profile, goroutines and memory statistics with the polls
	// held are written to dir too (what a held poll costs, item by item).
	diagDir := os.Getenv("TETHER_BENCH_DIAG")
	diagAddr := freeAddr(b)
	addr, server := startServe(b, db, "--diag-listen", diagAddr)
	diagBase := "http://" + diagAddr
	base := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: polls + 100, MaxIdleConnsPerHost: polls + 100, IdleConnTimeout: time.Minute}}
	for range 5 {
		if resp, err := hc.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
		}
	}
	time.Sleep(time.Second)
	before := rss(b, server.Process.Pid)

	// Hold the polls. A poller that gets a job reports when it arrived, acks
	// it and polls again.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	arrived := map[string]chan time.Time{}
	expect := func(jobID string) chan time.Time {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := arrived[jobID]
		if !ok {
			ch = make(chan time.Time, 1)
			arrived[jobID] = ch
		}
		return ch
	}
	var pollers sync.WaitGroup
	for i, a := range agents {
		if i%500 == 0 {
			time.Sleep(50 * time.Millisecond) // ramp up: the listen backlog is finite
		}
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/agent/jobs?wait=300&cluster="+a.clusterID, nil)
				req.Header.Set("Authorization", "Bearer "+a.bearer)
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil && os.Getenv("TETHER_BENCH_DIAG") != "" {
						b.Logf("poll: %v", err)
					}
					return
				}
				var body struct{ Jobs []struct{ ID string } }
				err = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				now := time.Now()
				if err != nil {
					return
				}
				for _, j := range body.Jobs {
					expect(j.ID) <- now
					ack, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/agent/jobs/"+j.ID+"/ack", nil)
					ack.Header.Set("Authorization", "Bearer "+a.bearer)
					if r, err := hc.Do(ack); err == nil {
						io.Copy(io.Discard, r.Body)
						r.Body.Close()
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for heldPolls(hc, diagBase) < polls {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d polls held after 2 minutes", heldPolls(hc, diagBase), polls)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the server's heap settle
	perPoll := float64(rss(b, server.Process.Pid)-before) / float64(polls)
	if diagDir != "" {
		for name, path := range map[string]string{
			"heap.pb.gz":    "/debug/pprof/heap?gc=1",
			"goroutine.txt": "/debug/pprof/goroutine?debug=1",
			"metrics.txt":   "/metrics",
		} {
			saveDiag(b, hc, diagBase+path, filepath.Join(diagDir, fmt.Sprintf("polls%d-%s", polls, name)))
		}
		b.Logf("polls=%d: %.1f KiB/poll resident; profiles in %s", polls, perPoll/1024, diagDir)
		time.Sleep(15 * time.Second)
		b.Logf("polls=%d: %.1f KiB/poll resident 15 s later", polls, float64(rss(b, server.Process.Pid)-before)/float64(polls)/1024)
	}

	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"default"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		a := agents[rand.N(len(agents))]
		j, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: a.clusterID, Kind: registry.KindDelete, Payload: payload})
		if err != nil {
			b.Fatal(err)
		}
		enqueued := time.Now() // committed: from here on it is tether's to deliver
		select {
		case at := <-expect(j.ID):
			lat = append(lat, at.Sub(enqueued))
		case <-time.After(30 * time.Second):
			b.Fatalf("job %s was not delivered within 30s", j.ID)
		}
		time.Sleep(10 * time.Millisecond) // one wake-up at a time
	}
	b.StopTimer()
	cancel()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(perPoll/1024, "KiB/poll")
}

// freeAddr picks a loopback address nothing listens on.
func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func saveDiag(b *testing.B, c *http.Client, url, path string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}
