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

	_ "modernc.org/sqlite"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/apiclient"
)

const (
	chaosFor     = 60 * time.Second // load with kills
	settleWithin = 90 * time.Second // then every job must end
	leaseSeconds = 10
	agents       = 3 // pollers of one cluster
)

func TestChaosSQLite(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tether")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tetherhq/tether/cmd/tether").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "tether.db")
	cli := func(args ...string) []byte {
		out, err := exec.Command(bin, append([]string{"--db", db}, args...)...).Output()
		if err != nil {
			t.Fatalf("tether %v: %v", args, err)
		}
		return out
	}
	cli("cluster", "create", "--name", "c1", "--namespaces", "apps", "--lease-seconds", fmt.Sprint(leaseSeconds), "--max-attempts", "100", "-o", "json")
	var adm struct{ Token string }
	if err := json.Unmarshal(cli("admin-token", "create", "--name", "chaos", "--role", "admin", "-o", "json"), &adm); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr

	var srvMu sync.Mutex
	var srv *exec.Cmd
	start := func() {
		srvMu.Lock()
		defer srvMu.Unlock()
		srv = exec.Command(bin, "--db", db, "serve", "--listen", addr, "--log-level", "error")
		srv.Stderr = os.Stderr
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	}
	kill := func() {
		srvMu.Lock()
		defer srvMu.Unlock()
		_ = srv.Process.Kill() // SIGKILL
		_ = srv.Wait()
	}
	start()
	defer kill()

	ctx := context.Background()
	admin, err := adminclient.New(base, adm.Token)
	if err != nil {
		t.Fatal(err)
	}
	waitUp := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := admin.Stats(ctx); err == nil {
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
	for range agents {
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
			j, err := admin.SubmitJob(c, adminclient.Submission{Cluster: "c1", Kind: "apply", IdempotencyKey: fmt.Sprintf("k-%d", i),
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
		kill()
		kills++
		start()
	}
	stopLoad()
	// Every job must end: lost acks come back after their lease.
	deadline := time.Now().Add(settleWithin)
	for {
		st, err := admin.Stats(ctx)
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
	kill()

	// The invariants, on the database itself.
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var integrity string
	if err := conn.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check: %q %v", integrity, err)
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
	summary := fmt.Sprintf("chaos sqlite: %d kills in %s, %d jobs (%d acknowledged submits), %d acks, lost %d, acked twice %d, finished twice %d, open %d, integrity %s",
		kills, chaosFor, len(states), len(submitted), countAcks(acks), lost, doubleAck, doubleFinish, open, integrity)
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
