package river

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite", as tether's store uses

	"github.com/tetherhq/tether/internal/testing/benchlife"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// BenchmarkPeers runs, in one process and one after another, the lifecycle
// scenario (32 apiclient agents; poll, ack, status, result; producers keeping
// two jobs queued per cluster) against: the trivial handler, tether on
// SQLite, River bridged on SQLite (riversqlite, modernc.org/sqlite), tether
// on PostgreSQL and River bridged on PostgreSQL (riverpgxv5), each on a
// database of its own; then the durable bridge (bridge_test.go: an ack, a
// status and a result are durable when answered, as tether's are) on each.
// Its ratios are of figures measured in the same run.
// On PostgreSQL it also reads the commits (pg_stat_database) and the CPU of
// the database's backends (/proc) over each run's lifecycles. Without
// TETHER_TEST_POSTGRES_DSN only the SQLite runs are made.
func BenchmarkPeers(b *testing.B) {
	const agents = benchlife.Agents
	n := b.N
	var cpu [7]float64 // this process's CPU seconds in each run's window
	baseline := benchlife.RunBaseline(b, agents, n, cpuWindow(nil, &cpu[0]))
	tetherSQLite, _, _ := benchlife.RunTether(b, []registry.Store{benchlife.OpenSQLite(b)}, agents, n, cpuWindow(nil, &cpu[1]))
	bridgeSQLite := runBridge(b, sqliteDriver(b), false, agents, n, cpuWindow(nil, &cpu[2]))
	durableSQLite := runBridge(b, sqliteDriver(b), true, agents, n, cpuWindow(nil, &cpu[5]))

	N := float64(n)
	perLifecycle := func(s float64) float64 { return 1000 * s / N }
	// Each run's b.ResetTimer drops the metrics reported before it: report
	// them all at the end.
	metrics := map[string]float64{}
	defer func() {
		for unit, v := range metrics {
			b.ReportMetric(v, unit)
		}
	}()
	report := func(v float64, unit string) { metrics[unit] = v }
	report(perLifecycle(cpu[0]), "baseline-cpu-ms/lifecycle")
	report(perLifecycle(cpu[1]), "sqlite-cpu-ms/lifecycle")
	report(perLifecycle(cpu[2]), "bridge-sqlite-cpu-ms/lifecycle")
	report(perLifecycle(cpu[5]), "durable-sqlite-cpu-ms/lifecycle")
	report(baseline, "baseline-lifecycles/s")
	report(tetherSQLite, "sqlite-lifecycles/s")
	report(bridgeSQLite, "bridge-sqlite-lifecycles/s")
	report(durableSQLite, "durable-sqlite-lifecycles/s")
	report(tetherSQLite/bridgeSQLite, "sqlite-bridge-sqlite-ratio")
	report(tetherSQLite/durableSQLite, "sqlite-durable-sqlite-ratio")
	report(tetherSQLite/baseline, "sqlite-baseline-ratio")
	if os.Getenv(benchlife.DSNEnv) == "" {
		b.Logf("%s is not set: the PostgreSQL runs are skipped", benchlife.DSNEnv)
		b.Logf("River %s", riverVersion())
		return
	}

	tdsn, tmeter := benchlife.Database(b, "tether_peer")
	var tu benchlife.Usage
	tetherPG, _, _ := benchlife.RunTether(b, []registry.Store{openPostgres(b, tdsn)}, agents, n, cpuWindow(meterWindow(b, tmeter, &tu), &cpu[3]))
	rdsn, rmeter := benchlife.Database(b, "river_peer")
	var ru benchlife.Usage
	bridgePG := runBridge(b, pgDriver(b, rdsn, 0), false, agents, n, cpuWindow(meterWindow(b, rmeter, &ru), &cpu[4]))
	ddsn, dmeter := benchlife.Database(b, "river_durable_peer")
	var du benchlife.Usage
	// A connection per agent: each of the durable bridge's answers waits for
	// a commit of its own, and on pgxpool's default of 4 connections they
	// queued for the pool (677 lifecycles/s against 876-881 with 16 or 32).
	durablePG := runBridge(b, pgDriver(b, ddsn, agents), true, agents, n, cpuWindow(meterWindow(b, dmeter, &du), &cpu[6]))
	report(perLifecycle(cpu[3]), "pg-go-cpu-ms/lifecycle")
	report(perLifecycle(cpu[4]), "bridge-pg-go-cpu-ms/lifecycle")
	report(perLifecycle(cpu[6]), "durable-pg-go-cpu-ms/lifecycle")

	report(tetherPG, "pg-lifecycles/s")
	report(bridgePG, "bridge-pg-lifecycles/s")
	report(tetherSQLite/max(bridgeSQLite, bridgePG), "sqlite-bridge-ratio")
	report(tetherPG/bridgePG, "pg-bridge-ratio")
	report(durablePG, "durable-pg-lifecycles/s")
	report(tetherSQLite/max(durableSQLite, durablePG), "sqlite-durable-ratio")
	report(tetherPG/durablePG, "pg-durable-ratio")
	report(float64(du.Commits)/N, "durable-pg-commits/lifecycle")
	report(1000*du.BackendCPU/N, "durable-pg-cpu-ms/lifecycle")
	if du.BackendCPU > 0 {
		report(tu.BackendCPU/du.BackendCPU, "pg-durable-cpu-ratio")
	}
	report(float64(tu.Commits)/N, "pg-commits/lifecycle")
	report(float64(ru.Commits)/N, "bridge-pg-commits/lifecycle")
	report(1000*tu.BackendCPU/N, "pg-cpu-ms/lifecycle")
	report(1000*ru.BackendCPU/N, "bridge-pg-cpu-ms/lifecycle")
	if ru.BackendCPU > 0 {
		report(tu.BackendCPU/ru.BackendCPU, "pg-cpu-ratio")
	}
	b.Logf("River %s", riverVersion())
}

// cpuWindow is inner (nil for none) that also puts this process's CPU
// seconds over the window in cpu (read inside inner's, which waits for the
// database's counters to settle).
func cpuWindow(inner benchlife.Window, cpu *float64) benchlife.Window {
	return func() func() {
		var end func()
		if inner != nil {
			end = inner()
		}
		t0 := benchlife.ProcessCPU()
		return func() {
			*cpu = benchlife.ProcessCPU() - t0
			if end != nil {
				end()
			}
		}
	}
}

func meterWindow(b *testing.B, m *benchlife.Meter, u *benchlife.Usage) benchlife.Window {
	return func() func() {
		r := m.Start(b)
		return func() { *u = m.End(b, r) }
	}
}

func openPostgres(b *testing.B, dsn string) registry.Store {
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// pgDriver migrates River into the database at dsn and returns its driver,
// on a pool of maxConns connections (0: pgxpool's default, 4 on this
// machine).
func pgDriver(b *testing.B, dsn string, maxConns int32) *riverpgxv5.Driver {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	return driver
}

// sqliteDriver migrates River into a new SQLite file, in WAL mode with
// synchronous=NORMAL as tether's store, on one connection as riversqlite's
// documentation advises, and returns its driver.
func sqliteDriver(b *testing.B) *riversqlite.Driver {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "river.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	driver := riversqlite.New(db)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	return driver
}
