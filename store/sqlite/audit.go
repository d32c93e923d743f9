package sqlite

import (
	"context"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

func (t *txn) audit(entries ...registry.AuditEntry) error {
	for _, a := range entries {
		if _, err := t.exec(`INSERT INTO audit (at, actor, action, cluster_id, target_kind, target_id, reason) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			col.MS(a.At), a.Actor, a.Action, a.ClusterID, a.TargetKind, a.TargetID, a.Reason); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) AuditAppend(ctx context.Context, entries ...registry.AuditEntry) error {
	return s.write(ctx, func(t *txn) error { return t.audit(entries...) })
}

func (s *Store) AuditList(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	q := `SELECT id, at, actor, action, cluster_id, target_kind, target_id, reason FROM audit WHERE 1 = 1`
	var args []any
	if p.Action != "" {
		q += " AND action >= ? AND action < ?"
		args = append(args, p.Action, p.Action+"\uffff")
	}
	q, args = feedPage(q, args, p.ClusterID, p.ClusterIDs, p.AfterID, p.BeforeID, p.Limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.AuditEntry{}
	for rows.Next() {
		var a registry.AuditEntry
		if err := rows.Scan(&a.ID, col.Time(&a.At), &a.Actor, &a.Action, &a.ClusterID, &a.TargetKind, &a.TargetID, &a.Reason); err != nil {
			return nil, s.wrap(err, "read the audit trail")
		}
		out = append(out, a)
	}
	return out, s.wrap(rows.Err(), "read the audit trail")
}
