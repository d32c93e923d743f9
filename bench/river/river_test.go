// Package river measures River (github.com/riverqueue/river), a job queue on
// PostgreSQL, on the database tether's PostgreSQL scenarios use: the
// reference point of `make bench`'s "lifecycle on PostgreSQL / River" row.
// It is a module of its own so that River is a benchmark-only dependency:
// tether's module, and so its binary, never includes it.
package river

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const dsnEnv = "TETHER_TEST_POSTGRES_DSN"

// producers insert jobs, as many as the lifecycle scenario's agents, while
// fewer than outstanding jobs are waiting or running: enough that River's
// fetch and completion batching are never starved (with two per producer,
// as tether's scenario keeps queued, River does about 250 jobs/s: the
// batching's latency, not its throughput).
const (
	producers   = 32
	outstanding = 1000
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// BenchmarkRiver: producers insert jobs one at a time (no batch insert),
// up to outstanding jobs not yet completed; a no-op worker completes them; fetch
// cooldown 5 ms, poll interval 50 ms, otherwise River's defaults. Reports
// completed jobs/s in steady state (the clock starts after a warm-up) and
// River's version.
func BenchmarkRiver(b *testing.B) {
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		b.Skip(dsnEnv + " is not set: skipping the River scenario")
	}
	ctx := context.Background()
	schema := "river_bench_" + randomHex()
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	pool, err := pgxpool.New(ctx, withSearchPath(b, dsn, schema))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}

	room := make(chan struct{}, outstanding)
	for range outstanding {
		room <- struct{}{}
	}
	var done atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Logger:            slog.New(slog.DiscardHandler), // the producers' last inserts are cut short on purpose
		Schema:            schema,
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		Workers:           workers,
	})
	if err != nil {
		b.Fatal(err)
	}
	completed, stopSub := client.Subscribe(river.EventKindJobCompleted)
	defer stopSub()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer client.Stop(context.Background())

	warmup := int64(max(b.N/10, 100))
	target := warmup + int64(b.N)
	startAt := make(chan time.Time, 1)
	finished := make(chan time.Time, 1)
	go func() {
		for range completed {
			room <- struct{}{}
			switch done.Add(1) {
			case warmup:
				startAt <- time.Now()
			case target:
				finished <- time.Now()
			}
		}
	}()
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	for range producers {
		go func() {
			for {
				select {
				case <-pctx.Done():
					return
				case <-room:
					if _, err := client.Insert(pctx, noopArgs{}, nil); err != nil && pctx.Err() == nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	t0 := <-startAt
	b.ResetTimer()
	t1 := <-finished
	b.StopTimer()
	stopProducers()
	b.ReportMetric(float64(b.N)/t1.Sub(t0).Seconds(), "jobs/s")
	b.Logf("River %s", riverVersion())
}

// riverVersion is the version this module requires (go.mod, beside this
// file: go test runs in the package's directory).
func riverVersion() string {
	mod, _ := os.ReadFile("go.mod")
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/riverqueue/river" {
			return f[1]
		}
	}
	return "(version unknown)"
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func withSearchPath(b *testing.B, dsn, schema string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
