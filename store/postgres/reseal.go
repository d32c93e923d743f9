package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/sealed"
)

func pgPH(i int) string { return "$" + strconv.Itoa(i) }

func (s *Store) SealedPage(ctx context.Context, kind registry.SealedKind, after string, limit int) ([]registry.SealedValue, error) {
	c, err := sealed.Of(kind)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, "read sealed values", c.PageSQL(pgPH), after, limit)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read sealed values", func(r pgx.Rows) (registry.SealedValue, error) {
		var v registry.SealedValue
		err := r.Scan(&v.ID, &v.Sealed)
		return v, err
	})
}

func (s *Store) SealedSwap(ctx context.Context, kind registry.SealedKind, swaps []registry.SealedSwap) (int, error) {
	c, err := sealed.Of(kind)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.write(ctx, "re-seal values", func(ctx context.Context, q db) error {
		n = 0
		for _, sw := range swaps {
			tag, err := q.Exec(ctx, c.SwapSQL(pgPH), sw.New, sw.ID, sw.Old)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, err
}
