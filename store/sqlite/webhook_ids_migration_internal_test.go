package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestWebhookDeliveryIDsMigration: a database written before migration 0018
// (schema 17) keeps its deliveries, ids and all, and its triggers still fill
// the outbox; once its subscription is deleted and created again, the next
// delivery's id is above every id the receiver has seen.
func TestWebhookDeliveryIDsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	db := migratedTo(t, path, 17)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
			mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at)
			VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, ?, ?)`, []any{ms, ms}},
		{`INSERT INTO webhooks (id, name, url, events, sealed_secret, created_at, created_by)
			VALUES ('wh-old', 'billing', 'https://billing.example.com', '["job.finished"]', x'00', ?, 'admin')`, []any{ms}},
		{`INSERT INTO webhook_deliveries (id, webhook_id, event, cluster_id, subject_id, data, created_at, state, next_attempt_at)
			VALUES (7, 'wh-old', 'job.finished', 'cl-1', 'j-0', '{}', ?, 'delivered', ?), (8, 'wh-old', 'job.finished', 'cl-1', 'j-1', '{}', ?, 'pending', ?)`,
			[]any{ms, ms, ms, ms}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrading schema 17: %v", err)
	}
	defer st.Close()
	kept, err := st.WebhookDeliveries(ctx, "wh-old", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].ID != 8 || kept[0].State != registry.DeliveryPending || kept[1].ID != 7 || kept[1].State != registry.DeliveryDelivered {
		t.Fatalf("deliveries after the upgrade: %+v", kept)
	}
	audit := registry.AuditEntry{At: now, Actor: "admin:test", Action: "test"}
	if err := st.WebhookDelete(ctx, registry.WebhookDeleteParams{ID: "wh-old", Audit: audit}); err != nil {
		t.Fatal(err)
	}
	w := registry.Webhook{ID: "wh-new", Name: "billing", URL: "https://billing.example.com", Events: []string{registry.WebhookJobFinished},
		SealedSecret: []byte{0}, CreatedAt: now, CreatedBy: "admin"}
	if err := st.WebhookCreate(ctx, registry.WebhookCreateParams{Webhook: w, Audit: audit}); err != nil {
		t.Fatal(err)
	}
	job := registry.Job{ID: "j-2", ClusterID: "cl-1", Kind: registry.KindApply, Payload: []byte("{}"), State: registry.JobQueued,
		Attempt: 1, CreatedAt: now, UpdatedAt: now}
	if _, _, err := st.JobInsert(ctx, registry.JobInsertParams{Job: job, Audit: audit,
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted}}); err != nil {
		t.Fatal(err)
	}
	if _, applied, err := st.JobUpdate(ctx, registry.JobUpdateParams{ID: "j-2", FromStates: []registry.JobState{registry.JobQueued},
		Set: registry.JobSet{Now: now, State: registry.JobCanceled, FinishedAt: now}}); err != nil || !applied {
		t.Fatalf("cancel: %v, %v", applied, err)
	}
	ds, err := st.WebhookDeliveries(ctx, "wh-new", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].ID <= 8 {
		t.Fatalf("the new subscription's deliveries %+v: want one, with an id above 8", ds)
	}
}
