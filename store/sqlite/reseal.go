package sqlite

import (
	"context"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/sealed"
)

func sqlitePH(int) string { return "?" }

func (s *Store) SealedPage(ctx context.Context, kind registry.SealedKind, after string, limit int) ([]registry.SealedValue, error) {
	c, err := sealed.Of(kind)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, c.PageSQL(sqlitePH), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.SealedValue{}
	for rows.Next() {
		var v registry.SealedValue
		if err := rows.Scan(&v.ID, &v.Sealed); err != nil {
			return nil, s.wrap(err, "read sealed values")
		}
		out = append(out, v)
	}
	return out, s.wrap(rows.Err(), "read sealed values")
}

func (s *Store) SealedSwap(ctx context.Context, kind registry.SealedKind, swaps []registry.SealedSwap) (int, error) {
	c, err := sealed.Of(kind)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.write(ctx, func(t *txn) error {
		n = 0
		for _, sw := range swaps {
			res, err := t.exec(c.SwapSQL(sqlitePH), sw.New, sw.ID, sw.Old)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	return n, err
}
