package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// insertAudit writes audit entries in one statement.
func insertAudit(ctx context.Context, q db, entries ...registry.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	at := make([]*int64, len(entries))
	cols := make([][]string, 6)
	for i := range cols {
		cols[i] = make([]string, len(entries))
	}
	for i, e := range entries {
		at[i] = msPtr(e.At)
		cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i], cols[5][i] = e.Actor, e.Action, e.ClusterID, e.TargetKind, e.TargetID, e.Reason
	}
	_, err := q.Exec(ctx, `INSERT INTO audit (at, actor, action, cluster_id, target_kind, target_id, reason)
		SELECT at, actor, action, cluster_id, target_kind, target_id, reason
		FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], $7::TEXT[]) WITH ORDINALITY
			AS e (at, actor, action, cluster_id, target_kind, target_id, reason, ord)
		ORDER BY ord`, at, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5])
	return err
}

// auditFrom renders an INSERT of the audit entry e, once for each row of the
// relation from (or once, when from is empty), for a data-modifying CTE.
// clusterCol, when set, is a column of from that replaces e's cluster id.
func auditFrom(a *args, e registry.AuditEntry, from, clusterCol string) string {
	cluster := clusterCol
	if cluster == "" {
		cluster = a.add(e.ClusterID) + "::TEXT"
	}
	sql := `INSERT INTO audit (at, actor, action, cluster_id, target_kind, target_id, reason) SELECT ` +
		a.add(col.MS(e.At)) + `::BIGINT, ` + a.add(e.Actor) + `::TEXT, ` + a.add(e.Action) + `::TEXT, ` + cluster + `, ` +
		a.add(e.TargetKind) + `::TEXT, ` + a.add(e.TargetID) + `::TEXT, ` + a.add(e.Reason) + `::TEXT`
	if from != "" {
		sql += " FROM " + from
	}
	return sql
}

func (s *Store) AuditAppend(ctx context.Context, entries ...registry.AuditEntry) error {
	return s.stmt(ctx, "write the audit trail", func(ctx context.Context, q db) error { return insertAudit(ctx, q, entries...) })
}

func (s *Store) AuditList(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	var a args
	q := `SELECT id, at, actor, action, cluster_id, target_kind, target_id, reason FROM audit WHERE true`
	if p.Action != "" {
		q += " AND action >= " + a.add(p.Action) + " AND action < " + a.add(p.Action+"\uffff")
	}
	q += feedPage(&a, p.ClusterID, p.ClusterIDs, p.AfterID, p.BeforeID, p.Limit)
	rows, err := s.query(ctx, "read the audit trail", q, a...)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read the audit trail", func(r pgx.Rows) (registry.AuditEntry, error) {
		var e registry.AuditEntry
		err := r.Scan(&e.ID, col.Time(&e.At), &e.Actor, &e.Action, &e.ClusterID, &e.TargetKind, &e.TargetID, &e.Reason)
		return e, err
	})
}
