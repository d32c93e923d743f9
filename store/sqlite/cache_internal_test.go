package sqlite

import (
	"context"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every connection's page cache is CacheKiB (32 MiB by default): the
// readers', which a console over a large database fills, and the writer's.
func TestCacheKiBSizesEveryConnection(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want int
	}{{Options{}, -32768}, {Options{CacheKiB: 2048}, -2048}} {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tether.db"), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var reader int
		if err := s.queryRow(context.Background(), "PRAGMA cache_size").Scan(&reader); err != nil {
			t.Fatal(err)
		}
		// The writer's one connection belongs to its goroutine: its DSN
		// says what it was opened with.
		want := "cache_size(" + strconv.Itoa(tc.want) + ")"
		if reader != tc.want || !strings.Contains(s.writerDSN, url.QueryEscape(want)) {
			t.Errorf("CacheKiB %d: cache_size %d on a reader, writer opened with %s; want %d", tc.opts.CacheKiB, reader, s.writerDSN, tc.want)
		}
		s.Close()
	}
}
