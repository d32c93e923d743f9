package registry

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// slowReadStore answers the record cache's reads; while during is set, a
// read calls it before answering, as if changes were dispatched while the
// read ran.
type slowReadStore struct {
	Store
	reads  atomic.Int64
	during func()
}

func (s *slowReadStore) ClusterGet(_ context.Context, id string) (*Cluster, error) {
	s.reads.Add(1)
	if s.during != nil {
		s.during()
	}
	return &Cluster{ID: id}, nil
}

func (s *slowReadStore) CredentialGet(_ context.Context, id string) (*Credential, error) {
	s.reads.Add(1)
	if s.during != nil {
		s.during()
	}
	return &Credential{ID: id, ClusterID: "cl-1"}, nil
}

// followingCache is a record cache over a hub that follows (as if its
// goroutine ran) at position 10; dispatch hands it changes by hand.
func followingCache(st Store) (*recordCache, *hub) {
	h := newHub(st)
	h.started, h.last = true, 10
	return newRecordCache(h, time.Now), h
}

// Under load the feed never stops: changes to other entities dispatched
// while a record is read must not keep it out of the cache, or every agent
// request reads its credential and cluster again (as it did). A change to
// the record itself (or, for a credential, to its cluster) dispatched
// during the read keeps it out: the read may predate it.
func TestTheRecordCacheKeepsWhatABusyFeedDidNotChange(t *testing.T) {
	ctx := context.Background()
	st := &slowReadStore{}
	c, h := followingCache(st)
	seq := int64(10)
	feed := func(changes ...Change) func() {
		return func() {
			for i := range changes {
				seq++
				changes[i].Seq = seq
			}
			h.dispatch(changes)
		}
	}
	readTwice := func(read func() error) int64 {
		t.Helper()
		before := st.reads.Load()
		if err := read(); err != nil {
			t.Fatal(err)
		}
		st.during = nil
		if err := read(); err != nil {
			t.Fatal(err)
		}
		return st.reads.Load() - before
	}
	cluster := func(id string) func() error {
		return func() error { _, err := c.cluster(ctx, st, id); return err }
	}
	credential := func(id string) func() error {
		return func() error { _, err := c.credential(ctx, st, id); return err }
	}

	st.during = feed(Change{Kind: EntityJob, ID: "job-1", ClusterID: "cl-1"}, Change{Kind: EntityCluster, ID: "cl-2"},
		Change{Kind: EntityCredential, ID: "cred-2"}, Change{Kind: EntityAudit, ClusterID: "cl-1"})
	if n := readTwice(cluster("cl-1")); n != 1 {
		t.Errorf("cluster cl-1 read %d times with other entities' changes dispatched during the first read, want 1 (then cached)", n)
	}
	st.during = feed(Change{Kind: EntityJob, ID: "job-2", ClusterID: "cl-1"})
	if n := readTwice(credential("cred-1")); n != 1 {
		t.Errorf("credential read %d times with a job's change dispatched during the first read, want 1", n)
	}

	st.during = feed(Change{Kind: EntityCluster, ID: "cl-3"})
	if n := readTwice(cluster("cl-3")); n != 2 {
		t.Errorf("cluster cl-3 read %d times with its own change dispatched during the first read, want 2 (not cached)", n)
	}
	c.evictCluster("cl-1") // the credential is cached with its cluster: start over
	st.during = feed(Change{Kind: EntityCluster, ID: "cl-1"})
	if n := readTwice(credential("cred-1")); n != 2 {
		t.Errorf("credential read %d times with its cluster's change dispatched during the first read, want 2", n)
	}
	st.during = feed(Change{Kind: EntityCredential, ID: "cred-4"})
	if n := readTwice(credential("cred-4")); n != 2 {
		t.Errorf("credential read %d times with its own change dispatched during the first read, want 2", n)
	}

	// Past maxEvictions the positions are forgotten: a read that began
	// before cannot tell, and is not cached.
	st.during = func() {
		for i := range maxEvictions + 1 {
			feed(Change{Kind: EntityCluster, ID: "other-" + string(rune('a'+i%26)) + string(rune(i))})()
		}
	}
	if n := readTwice(cluster("cl-5")); n != 2 {
		t.Errorf("cluster read %d times across a clear of the evictions' positions, want 2", n)
	}
	if n := readTwice(cluster("cl-6")); n != 1 {
		t.Errorf("cluster read %d times after the clear with nothing dispatched, want 1", n)
	}
}
