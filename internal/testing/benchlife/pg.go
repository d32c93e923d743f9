package benchlife

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSNEnv names the variable the PostgreSQL scenarios need (they skip without it).
const DSNEnv = "TETHER_TEST_POSTGRES_DSN"

// Database creates a database of its own on the server $TETHER_TEST_POSTGRES_DSN
// names (so that pg_stat_database and pg_stat_activity count this scenario
// alone on a server others use), dropped when b ends. It returns its DSN and
// a Meter of it. Without the variable b is skipped.
func Database(b *testing.B, prefix string) (string, *Meter) {
	server := os.Getenv(DSNEnv)
	if server == "" {
		b.Skip(DSNEnv + " is not set: skipping the PostgreSQL scenarios")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		b.Fatalf("connect to %s: %v", DSNEnv, err)
	}
	r := make([]byte, 6)
	rand.Read(r)
	name := prefix + "_" + hex.EncodeToString(r)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		b.Fatalf("create database %s: %v", name, err)
	}
	b.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			b.Errorf("drop database %s: %v", name, err)
		}
		conn.Close(context.Background())
	})
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		b.Fatalf("%s must be a URL (postgres://...) for the scenarios that create a database", DSNEnv)
	}
	u.Path = "/" + name
	return u.String(), &Meter{conn: conn, db: name}
}

// Meter reads one database's commits (pg_stat_database) and the CPU time its
// backends spent (/proc/PID/stat of the pids pg_stat_activity lists: the
// server must run on this machine).
type Meter struct {
	conn *pgx.Conn
	db   string
}

// Reading is what a Meter read at the start of a window.
type Reading struct {
	commits int64
	cpu     map[int]float64 // backend pid -> CPU seconds
	self    float64         // this process's CPU seconds
	at      time.Time
}

// Usage is what a window cost.
type Usage struct {
	Commits    int64
	BackendCPU float64 // seconds, the database's backends
	ProcessCPU float64 // seconds, this process (agents, producers, servers in it)
	Elapsed    time.Duration
}

// Start reads the counters at the start of a window. Backends report their
// commits to pg_stat_database when they go idle, at most once a second, so it
// first waits until the count has not moved for over a second (the setup's
// commits are in, and none of the window's is).
func (m *Meter) Start(b *testing.B) Reading {
	return Reading{commits: m.settledCommits(b), cpu: m.backendCPU(b), self: processCPU(), at: time.Now()}
}

// End is the window's usage since r: CPU at once, commits once settled.
func (m *Meter) End(b *testing.B, r Reading) Usage {
	u := Usage{ProcessCPU: processCPU() - r.self, Elapsed: time.Since(r.at)}
	for pid, s := range m.backendCPU(b) {
		u.BackendCPU += s - r.cpu[pid] // a backend new in the window started at 0
	}
	u.Commits = m.settledCommits(b) - r.commits
	return u
}

func (m *Meter) commits(b *testing.B) int64 {
	var n int64
	if err := m.conn.QueryRow(context.Background(), "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", m.db).Scan(&n); err != nil {
		b.Fatalf("pg_stat_database: %v", err)
	}
	return n
}

// settledCommits is the database's commit count once it has settled: once
// at most idleCommits were added over 1.5 s (30 s at most). A count that
// must stop moving altogether never settles for River, whose client commits
// about once a second while idle (its fetch poll and maintenance), and the
// run waited the full 30 s at each end of each window.
func (m *Meter) settledCommits(b *testing.B) int64 {
	const idleCommits = 10
	from, since := m.commits(b), time.Now()
	n := from
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		n = m.commits(b)
		if time.Since(since) < 1500*time.Millisecond {
			continue
		}
		if n-from <= idleCommits {
			break
		}
		from, since = n, time.Now()
	}
	return n
}

func (m *Meter) backendCPU(b *testing.B) map[int]float64 {
	rows, err := m.conn.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = $1", m.db)
	if err != nil {
		b.Fatalf("pg_stat_activity: %v", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatalf("pg_stat_activity: %v", err)
	}
	cpu := map[int]float64{}
	for _, pid := range pids {
		if s, ok := procCPU(int(pid)); ok {
			cpu[int(pid)] = s
		}
	}
	if len(pids) > 0 && len(cpu) == 0 {
		b.Fatal("the PostgreSQL backends are not in this machine's /proc: the CPU figures need the server on this machine")
	}
	return cpu
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// procCPU is utime+stime of a process in seconds, from /proc/PID/stat.
func procCPU(pid int) (float64, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (ut + st) / clockTicks, true
}

// processCPU is this process's user+system CPU seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// ProcessCPU is this process's user+system CPU seconds so far.
func ProcessCPU() float64 { return processCPU() }
