//go:build chaos

// Package chaos is tether's crash test (make chaos; not part of make test):
// agents and a producer work against a real `tether serve` while serve is
// killed with SIGKILL at random moments and restarted, then the invariants
// are checked on what the database holds.
package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/internal/testing/pgtest"
)

const (
	chaosFor     = 60 * time.Second // load with kills
	settleWithin = 90 * time.Second // then every job must end
	leaseSeconds = 10
	agents       = 3 // pollers of one cluster
)

// target is what the chaos runs against: replicas of serve over one
// database.
type target struct {
	name     string
	bin      string
	db       string   // --db
	extra    []string // more serve flags
	addrs    []string // one per replica
	mu       sync.Mutex
	replicas []*exec.Cmd
}

func (g *target) cli(t *testing.T, args ...string) []byte {
	out, err := exec.Command(g.bin, append([]string{"--db", g.db}, args...)...).Output()
	if err != nil {
		t.Fatalf("tether %v: %v", args, err)
	}
	return out
}

func (g *target) start(t *testing.T, i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cmd := exec.Command(g.bin, append([]string{"--db", g.db, "serve", "--listen", g.addrs[i], "--log-level", "error"}, g.extra...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.replicas[i] = cmd
}

func (g *target) kill(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.replicas[i]; c != nil {
		_ = c.Process.Kill() // SIGKILL
		_ = c.Wait()
		g.replicas[i] = nil
	}
}

func build(t *testing.T) (dir, bin string) {
	dir = t.TempDir()
	bin = filepath.Join(dir, "tether")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tetherhq/tether/cmd/tether").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return dir, bin
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestChaosSQLite: one serve, killed and restarted.
func TestChaosSQLite(t *testing.T) {
	dir, bin := build(t)
	g := &target{name: "sqlite", bin: bin, db: filepath.Join(dir, "tether.db"), addrs: []string{freeAddr(t)}}
	runChaos(t, g, func(conn *sql.DB) string { return scalar(conn, `PRAGMA integrity_check`) })
}

// TestChaosPostgres: two replicas over one database (a fresh schema of
// $TETHER_TEST_POSTGRES_DSN); one of them, at random, is killed and
// restarted while the other serves.
func TestChaosPostgres(t *testing.T) {
	db, _ := pgtest.Schema(t, "chaos") // skips without TETHER_TEST_POSTGRES_DSN
	dir, bin := build(t)
	key := filepath.Join(dir, "tether.key")
	g := &target{name: "postgres", bin: bin, db: db, extra: []string{"--key-file", key}, addrs: []string{freeAddr(t), freeAddr(t)}}
	g.cli(t, "keys", "init", "--key-file", key)
	// PostgreSQL has no integrity_check; its own guarantees cover the
	// pages. What can go wrong is ours: history of a job that is not there,
	// or job counts that disagree with the jobs.
	runChaos(t, g, func(conn *sql.DB) string {
		return scalar(conn, `SELECT CASE WHEN (SELECT count(*) FROM job_history h WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id)) = 0
			THEN 'ok' ELSE 'job history without its job' END`)
	})
}

func scalar(conn *sql.DB, q string) string {
	var res string
	if err := conn.QueryRow(q).Scan(&res); err != nil {
		return err.Error()
	}
	return res
}

func runChaos(t *testing.T, g *target, check func(*sql.DB) string) {
	g.replicas = make([]*exec.Cmd, len(g.addrs))
	var bases []string
	for _, a := range g.addrs {
		bases = append(bases, "http://"+a)
	}
	g.cli(t, "cluster", "create", "--name", "c1", "--namespaces", "apps", "--lease-seconds", fmt.Sprint(leaseSeconds), "--max-attempts", "100", "-o", "json")
	var adm struct{ Token string }
	if err := json.Unmarshal(g.cli(t, "admin-token", "create", "--name", "chaos", "--role", "admin", "-o", "json"), &adm); err != nil {
		t.Fatal(err)
	}
	for i := range g.addrs {
		g.start(t, i)
	}
	defer func() {
		for i := range g.addrs {
			g.kill(i)
		}
	}()

	ctx := context.Background()
	var admins []*adminclient.Client
	for _, b := range bases {
		a, err := adminclient.New(b, adm.Token)
		if err != nil {
			t.Fatal(err)
		}
		admins = append(admins, a)
	}
	admin := admins[0]
	waitUp := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			up := 0
			for _, a := range admins {
				if _, err := a.Stats(ctx); err == nil {
					up++
				}
			}
			if up == len(admins) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("serve did not come up")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitUp()

	var clients []*apiclient.Client
	for n := range agents {
		base := bases[n%len(bases)]
		tok, err := admin.IssueToken(ctx, "c1", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := apiclient.Register(ctx, base, tok.Token, apiclient.RegisterOptions{Capabilities: []string{"lease"}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := apiclient.New(apiclient.Config{BaseURL: base, Credential: cred,
			Retry: apiclient.RetryPolicy{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, MaxAttempts: 3}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}

	type ack struct {
		agent int
		claim string
		at    time.Time
	}
	var mu sync.Mutex
	submitted := map[string]bool{} // acknowledged submits
	acks := map[string][]ack{}
	finished := map[string]int{}
	kills := 0

	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the producer
		defer wg.Done()
		for i := 0; load.Err() == nil; i++ {
			c, cancel := context.WithTimeout(load, 3*time.Second)
			j, err := admins[i%len(admins)].SubmitJob(c, adminclient.Submission{Cluster: "c1", Kind: "apply", IdempotencyKey: fmt.Sprintf("k-%d", i),
				Payload: json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"apps"}}`, i))}, 0)
			cancel()
			if err == nil {
				mu.Lock()
				submitted[j.ID] = true
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	work, stopWork := context.WithCancel(ctx)
	for n, c := range clients {
		wg.Add(1)
		go func() { // an agent
			defer wg.Done()
			for work.Err() == nil {
				pc, cancel := context.WithTimeout(work, 3*time.Second)
				jobs, err := c.Poll(pc, time.Second, 10)
				cancel()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for _, j := range jobs {
					ac, cancel := context.WithTimeout(work, 3*time.Second)
					claim, err := c.Ack(ac, j.ID)
					cancel()
					if err != nil {
						continue
					}
					mu.Lock()
					acks[j.ID] = append(acks[j.ID], ack{n, claim.ClaimID, time.Now()})
					mu.Unlock()
					rc, cancel := context.WithTimeout(work, 3*time.Second)
					err = c.Result(rc, j.ID, claim.ClaimID, apiclient.Result{Outcome: "succeeded"})
					cancel()
					if err == nil {
						mu.Lock()
						finished[j.ID]++
						mu.Unlock()
					}
				}
			}
		}()
	}

	// The killer: SIGKILL at random moments, restart at once.
	end := time.Now().Add(chaosFor)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(500+rand.IntN(3500)) * time.Millisecond)
		victim := rand.IntN(len(g.addrs))
		g.kill(victim)
		kills++
		g.start(t, victim)
	}
	stopLoad()
	// Every job must end: lost acks come back after their lease.
	deadline := time.Now().Add(settleWithin)
	for {
		st, err := admins[rand.IntN(len(admins))].Stats(ctx)
		if err == nil && st.Jobs["queued"]+st.Jobs["in_progress"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("jobs still open after %s: %v (%v)", settleWithin, st, err)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopWork()
	wg.Wait()
	for i := range g.addrs {
		g.kill(i)
	}

	// The invariants, on the database itself.
	driver := "sqlite"
	if g.name == "postgres" {
		driver = "pgx"
	}
	conn, err := sql.Open(driver, g.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	integrity := check(conn)
	if integrity != "ok" {
		t.Errorf("integrity_check: %q", integrity)
	}
	states := map[string]string{}
	rows, err := conn.Query(`SELECT id, state FROM jobs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		states[id] = st
	}
	rows.Close()
	lost, open, doubleAck, doubleFinish := 0, 0, 0, 0
	for id := range submitted {
		if _, ok := states[id]; !ok {
			lost++
		}
	}
	for id, st := range states {
		if st == "queued" || st == "in_progress" {
			open++
		}
		if finished[id] > 1 {
			doubleFinish++
		}
		// Two live claims at once: a second ack before the first one's
		// lease could have ended.
		a := acks[id]
		for i := 1; i < len(a); i++ {
			if a[i].claim != a[i-1].claim && a[i].at.Sub(a[i-1].at) < leaseSeconds*time.Second-time.Second {
				doubleAck++
			}
		}
	}
	summary := fmt.Sprintf("chaos %s (%d replicas): %d kills in %s, %d jobs (%d acknowledged submits), %d acks, lost %d, acked twice %d, finished twice %d, open %d, integrity %s",
		g.name, len(g.addrs), kills, chaosFor, len(states), len(submitted), countAcks(acks), lost, doubleAck, doubleFinish, open, integrity)
	fmt.Println(summary)
	if lost+doubleAck+doubleFinish+open > 0 {
		t.Error(summary)
	}
}

func countAcks[T any](m map[string][]T) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}
