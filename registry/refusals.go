package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// AuditSignatureRefused is the audit action of refused signed writes: one
// entry per credential per minute in which any was refused, with the count by
// reason, so that a flood of forged or replayed requests cannot fill the
// trail.
const AuditSignatureRefused = "credential.signature_refused"

// MaxRefusalTallies bounds the credentials whose refusals are counted within
// one minute; past it, the rest are counted under "*" (the trail still says
// how many).
const MaxRefusalTallies = 10_000

// DefaultRefusalFlushInterval is how often SignatureRefusals.Run writes the
// minutes that have ended.
const DefaultRefusalFlushInterval = 10 * time.Second

// SignatureRefusals counts refused signatures per credential per minute, in
// memory, and writes each ended minute to the audit trail as one entry per
// credential. Safe for concurrent use.
type SignatureRefusals struct {
	reg  *Registry
	mu   sync.Mutex
	open map[refusalKey]*refusalTally
}

type refusalKey struct {
	credential string
	minute     int64 // unix minutes
}

type refusalTally struct {
	cluster string
	n       int
	byCode  map[Code]int
}

// NewSignatureRefusals returns an empty tally over reg.
func NewSignatureRefusals(reg *Registry) *SignatureRefusals {
	return &SignatureRefusals{reg: reg, open: map[refusalKey]*refusalTally{}}
}

// Record counts one refused signed write of agent a, refused with code.
func (s *SignatureRefusals) Record(a *Agent, code Code) {
	if a == nil || a.Credential == nil {
		return
	}
	cluster := ""
	if a.Cluster != nil {
		cluster = a.Cluster.ID
	}
	key := refusalKey{credential: a.Credential.ID, minute: s.reg.Now().Unix() / 60}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.open[key]
	if t == nil {
		if len(s.open) >= MaxRefusalTallies {
			key.credential = "*"
			t = s.open[key]
		}
		if t == nil {
			t = &refusalTally{cluster: cluster, byCode: map[Code]int{}}
			if key.credential == "*" {
				t.cluster = ""
			}
			s.open[key] = t
		}
	}
	t.n++
	t.byCode[code]++
}

// Flush writes the tallies of the minutes that have ended (all of them when
// all is set, as on shutdown) to the audit trail, in one append. Tallies it
// could not write are kept for the next flush.
func (s *SignatureRefusals) Flush(ctx context.Context, all bool) error {
	current := s.reg.Now().Unix() / 60
	s.mu.Lock()
	var keys []refusalKey
	for k := range s.open {
		if all || k.minute < current {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].minute != keys[j].minute {
			return keys[i].minute < keys[j].minute
		}
		return keys[i].credential < keys[j].credential
	})
	entries := make([]AuditEntry, 0, len(keys))
	tallies := make([]*refusalTally, 0, len(keys))
	for _, k := range keys {
		t := s.open[k]
		tallies = append(tallies, t)
		delete(s.open, k)
		start := time.Unix(k.minute*60, 0).UTC()
		codes := make([]string, 0, len(t.byCode))
		for c, n := range t.byCode {
			codes = append(codes, fmt.Sprintf("%s: %d", c, n))
		}
		sort.Strings(codes)
		entries = append(entries, AuditEntry{
			At:         start.Add(time.Minute - time.Millisecond),
			Actor:      Actor{Kind: ActorSystem, Name: "signatures"}.String(),
			Action:     AuditSignatureRefused,
			ClusterID:  t.cluster,
			TargetKind: "credential",
			TargetID:   k.credential,
			Reason: fmt.Sprintf("%d signed writes refused in the minute from %s (%s)",
				t.n, start.Format("15:04"), strings.Join(codes, ", ")),
		})
	}
	s.mu.Unlock()
	if len(entries) == 0 {
		return nil
	}
	if err := s.reg.store.AuditAppend(ctx, entries...); err != nil {
		s.mu.Lock()
		for i, k := range keys { // keep them (merging with any counted since)
			if t := s.open[k]; t != nil {
				t.n += tallies[i].n
				for c, n := range tallies[i].byCode {
					t.byCode[c] += n
				}
			} else {
				s.open[k] = tallies[i]
			}
		}
		s.mu.Unlock()
		return err
	}
	return nil
}

// Run flushes the ended minutes every interval (DefaultRefusalFlushInterval
// when zero) until ctx ends, then everything still counted.
func (s *SignatureRefusals) Run(ctx context.Context, interval time.Duration, report func(error)) {
	if interval <= 0 {
		interval = DefaultRefusalFlushInterval
	}
	every(ctx, interval, func() {
		if err := s.Flush(ctx, false); err != nil && report != nil && ctx.Err() == nil {
			report(err)
		}
	})
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Flush(stop, true); err != nil && report != nil {
		report(err)
	}
}
