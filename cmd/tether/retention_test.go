package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeDeletesWhatIsKeptNoLonger: serve's retention service deletes a
// job that finished past --retain-finished-jobs (with its timeline), audit
// entries past --retain-audit and webhook deliveries that ended past
// --retain-webhook-deliveries and expired idempotency keys at start, and
// keeps the recent ones; a bad per-state flag is a usage error.
func TestServeDeletesWhatIsKeptNoLonger(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	// Each job's end is a delivery; nothing listens at the address, so the
	// recent one stays pending while serve runs.
	ok(t, db, "webhook", "create", "--name", "outcomes", "--url", "http://127.0.0.1:1/hook", "--events", "job.finished", "--webhook-allow-cidr", "127.0.0.1")
	old := submit(t, db, "prod", "apply", configMap("apps", "old"), "--idempotency-key", "old")
	recent := submit(t, db, "prod", "apply", configMap("apps", "recent"), "--idempotency-key", "recent")
	ok(t, db, "job", "cancel", old.ID, "--reason", "obsolete")
	ok(t, db, "job", "cancel", recent.ID, "--reason", "obsolete")

	// Make the one job and the first audit entry old, as if a month and two
	// years had passed.
	raw := openRawSQLite(t, db)
	monthsAgo := time.Now().Add(-40 * 24 * time.Hour).UnixMilli()
	yearsAgo := time.Now().Add(-2 * 365 * 24 * time.Hour).UnixMilli()
	if _, err := raw.Exec("UPDATE jobs SET created_at = ?, finished_at = ? WHERE id = ?", monthsAgo, monthsAgo, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE audit SET at = ? WHERE id = (SELECT min(id) FROM audit)", yearsAgo); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE webhook_deliveries SET state = 'delivered', created_at = ?, finished_at = ? WHERE subject_id = ?", monthsAgo, monthsAgo, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE idempotency_keys SET expires_at = ? WHERE job_id = ?", monthsAgo, old.ID); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	wantError(t, cli(t, db, "serve", "--retain-jobs-state", "queued=1d"), exitUsage, "finished state")
	// A usage error changes nothing: no database is created for it.
	fresh := newDB(t)
	wantError(t, cli(t, fresh, "serve", "--retain-jobs-state", "failed=soon"), exitUsage, "failed=soon")
	if _, err := os.Stat(fresh); err == nil {
		t.Fatal("serve created a database before refusing its --retain-jobs-state")
	}
	srv, _, _ := startServe(t, db, "--retain-finished-jobs", "30d", "--retain-audit", "365d", "--retain-webhook-deliveries", "30d")
	line := srv.waitLine(t, "retention deleted")
	srv.stop(t)
	if !strings.Contains(line, "jobs=1") || !strings.Contains(line, "audit_entries=1") || !strings.Contains(line, "webhook_deliveries=1") ||
		!strings.Contains(line, "idempotency_keys=1") {
		t.Fatalf("retention log line: %s", line)
	}
	if out := ok(t, db, "webhook", "deliveries", "outcomes", "-o", "json").stdout; strings.Contains(out, old.ID) || !strings.Contains(out, recent.ID) {
		t.Fatalf("deliveries after retention: the old job's should be gone and the recent job's pending one kept:\n%s", out)
	}
	wantError(t, cli(t, db, "job", "get", old.ID), exitError, old.ID)
	if out := ok(t, db, "job", "get", recent.ID).stdout; !strings.Contains(out, recent.ID) {
		t.Fatalf("the recent job is gone:\n%s", out)
	}
	if again := submit(t, db, "prod", "apply", configMap("apps", "recent"), "--idempotency-key", "recent"); again.Created || again.ID != recent.ID {
		t.Fatalf("the recent job's key after retention answered %s (created %v), want %s", again.ID, again.Created, recent.ID)
	}

	// 0 keeps forever: nothing more is deleted however old.
	raw = openRawSQLite(t, db)
	if _, err := raw.Exec("UPDATE jobs SET created_at = ?, finished_at = ?", yearsAgo, yearsAgo); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	srv, _, _ = startServe(t, db, "--retain-finished-jobs", "0", "--retain-audit", "0")
	_, log := srv.stop(t)
	if strings.Contains(log, "retention deleted") {
		t.Fatalf("retention 0 deleted something:\n%s", log)
	}
	ok(t, db, "job", "get", recent.ID)
}

// TestRetainJobsStateFromOneVariable: --retain-jobs-state takes several
// states comma-separated, as every list flag does, so that one variable
// ($TETHER_RETAIN_JOBS_STATE) can set them.
func TestRetainJobsStateFromOneVariable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	old := submit(t, db, "prod", "apply", configMap("apps", "old"))
	ok(t, db, "job", "cancel", old.ID, "--reason", "obsolete")
	raw := openRawSQLite(t, db)
	weeksAgo := time.Now().Add(-14 * 24 * time.Hour).UnixMilli()
	if _, err := raw.Exec("UPDATE jobs SET created_at = ?, finished_at = ? WHERE id = ?", weeksAgo, weeksAgo, old.ID); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	// Jobs are kept for ever but for canceled ones (7 days) and failed ones.
	srv, _, _ := startServeEnv(t, db, []string{"TETHER_RETAIN_JOBS_STATE=failed=90d, canceled=7d"}, "--listen", "127.0.0.1:0", "--retain-jobs", "0")
	line := srv.waitLine(t, "retention deleted")
	srv.stop(t)
	if !strings.Contains(line, "jobs=1") {
		t.Fatalf("retention log line: %s", line)
	}
	wantError(t, cli(t, db, "job", "get", old.ID), exitError, old.ID)
	wantError(t, cli(t, db, "serve", "--retain-jobs-state", "failed=90d,queued=1d"), exitUsage, `"queued=1d"`, "finished state")
}
