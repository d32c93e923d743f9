package postgres

import (
	"context"
	"time"
)

// The change feed's positions: given by the writers' groups when the feed
// lock is free, and by the sequencer's rounds (see writer.go's overview and
// migrations 0018 and 0028).

// --- the groups' part in positioning the feed ---
//
// A group's last statement, sent with its COMMIT, is tether_sequence_try
// (migration 0028): if the feed lock is free it positions every committed
// row that has none and the group's own, so that under load the groups
// position the feed and the sequencer's rounds, each a transaction and a
// WAL flush of its own, are not needed. If the lock is held the group does
// not wait, and its rows wait for the next holder. Watchers must still learn
// of them promptly, so the store makes sure that a holder comes after every
// group of its own that committed without positioning (a debt):
//
//   - debts numbers them. A group that sends its last statements notes the
//     number reached (mark): its statement's snapshot holds the rows of
//     those debts, so if it positions and commits, they are paid (covered).
//     A round notes it when it starts, and pays them when it ends.
//   - pending counts the groups that began and have not sent their last
//     statements: each will send after any debt left now, so it pays the
//     debt if it positions. Under load the next group does.
//   - The sequencer looks at unpaid debts pigSoon after they were left and
//     every pigSoon after that: while a group is pending it leaves them to
//     it; when none is, it runs a round. A pending group may be slow to send
//     (waiting for a row lock, the writers' lock or a connection), or not
//     position either (a holder that came before the debt had the lock): a
//     debt still unpaid pigGrace after it was left gets a round whatever is
//     pending.
//
// All under pigMu, so that a debt's number is taken after its group's
// commit, and a mark, before its group sends.

// A debt is looked at pigSoon after it was left, and every pigSoon after
// that: unpaid, it gets a round unless a group is pending, and after
// pigGrace whatever is pending (the watch's fan-out aims at < 50 ms p99).
const (
	pigSoon  = 3 * time.Millisecond
	pigGrace = 20 * time.Millisecond
)

// lastBatch is what a group's last statements did: mark is the debts
// incurred before they were sent, positioned what tether_sequence_try
// answered (-1: the lock was held), committed that COMMIT answered COMMIT.
type lastBatch struct {
	sent, committed  bool
	mark, positioned int64
}

// groupStarted counts a group that will send its last statements.
func (s *Store) groupStarted() {
	s.pigMu.Lock()
	s.pending++
	s.pigMu.Unlock()
}

// sendingLast is called just before a group sends its last statements.
func (s *Store) sendingLast(last *lastBatch) {
	s.pigMu.Lock()
	s.pending--
	last.sent, last.mark = true, s.debts
	s.pigMu.Unlock()
}

// groupEnded settles a group's part once its outcome is known. A group that
// sent its last statements and did not commit positioned rows leaves a
// debt (a COMMIT whose answer was lost may have committed).
func (s *Store) groupEnded(last *lastBatch) {
	won := last.committed && last.positioned >= 0
	if won {
		s.piggybacked.Add(1)
	}
	if won && last.positioned > 0 {
		s.notifyPositioned()
	}
	s.pigMu.Lock()
	switch {
	case !last.sent:
		s.pending--
	case won:
		s.covered = max(s.covered, last.mark)
	default:
		s.debts++
	}
	unpaid := s.debts > s.covered
	s.pigMu.Unlock()
	if unpaid {
		signal(s.owedKick)
	}
}

// roundMark is what a round pays if it ends positioning: the debts
// incurred before it started.
func (s *Store) roundMark() int64 {
	s.pigMu.Lock()
	defer s.pigMu.Unlock()
	return s.debts
}

// paid records that the debts up to mark are paid.
func (s *Store) paid(mark int64) {
	s.pigMu.Lock()
	s.covered = max(s.covered, mark)
	s.pigMu.Unlock()
}

// debtState is the debts incurred, the debts paid and the pending groups.
func (s *Store) debtState() (debts, covered int64, pending int) {
	s.pigMu.Lock()
	defer s.pigMu.Unlock()
	return s.debts, s.covered, s.pending
}

// --- the feed's sequencer ---

// sequenced returns once a call of tether_sequence that started after it was
// called has ended (or the store is closing, or ctx ended): every feed row
// committed before the call then has its position. The calls are the
// sequencer's rounds (sequenceLoop): one round serves every caller that
// asked while the previous one ran.
func (s *Store) sequenced(ctx context.Context) {
	s.seqMu.Lock()
	target := s.seqStarted + 1
	s.seqMu.Unlock()
	s.kickSequencer()
	for {
		s.seqMu.Lock()
		done, next := s.seqDone, s.seqRound
		s.seqMu.Unlock()
		if done >= target {
			return
		}
		select {
		case <-next:
		case <-s.closing:
			return
		case <-ctx.Done():
			return
		}
	}
}

// kickSequencer asks the sequencer for a round. A round asked for already
// starts after this point, so one request covers every caller meanwhile.
func (s *Store) kickSequencer() {
	select {
	case s.seqKick <- struct{}{}:
	default:
	}
}

// sequenceLoop is the store's sequencer: it runs a round when asked
// (sequenced), for a debt no group paid in time (see "the groups' part"),
// and every PollInterval anyway, so that the feed rows of a writer that committed and
// then lost its connection or its process are positioned, and announced,
// without waiting for the next write; the periodic round also folds the
// count deltas (tether_fold_counts).
func (s *Store) sequenceLoop() {
	defer s.writers.Done()
	sweep := time.NewTicker(s.opts.PollInterval)
	defer sweep.Stop()
	// While debts are unpaid, grace ticks every pigSoon: mark is the debts
	// incurred when it was armed, since when.
	var grace <-chan time.Time
	var mark int64
	var since time.Time
	for {
		fold := false
		select {
		case <-s.closing:
			return
		case <-s.seqKick:
		case <-sweep.C:
			fold = true
		case <-s.owedKick:
			if grace == nil {
				mark, _, _ = s.debtState()
				since, grace = time.Now(), time.After(pigSoon)
			}
			continue
		case <-grace:
			grace = nil
			debts, covered, pending := s.debtState()
			if covered >= mark {
				if debts > covered { // newer ones
					mark, since, grace = debts, time.Now(), time.After(pigSoon)
				}
				continue
			}
			if pending > 0 && time.Since(since) < pigGrace {
				grace = time.After(pigSoon) // left to a group that will send
				continue
			}
			s.kicked.Add(1)
		}
		s.seqMu.Lock()
		s.seqStarted++
		round := s.seqStarted
		s.seqMu.Unlock()
		owed := s.roundMark()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
		positioned, ok := s.sequence(ctx)
		if fold {
			s.pool.Exec(ctx, "SELECT tether_fold_counts()") // as sequence's: the next one folds them
		}
		cancel()
		if ok {
			s.paid(owed)
		}
		s.seqMu.Lock()
		s.seqDone = round
		close(s.seqRound)
		s.seqRound = make(chan struct{})
		s.seqMu.Unlock()
		if positioned > 0 {
			s.notifyPositioned()
		}
	}
}

// sequence runs tether_sequence and returns how many feed rows it
// positioned, and whether it ran. A failure is nobody's to report (the
// writes it would have announced were answered already): the rows it would
// have positioned are positioned by the next round or group, this
// replica's or another's.
func (s *Store) sequence(ctx context.Context) (int64, bool) {
	s.rounds.Add(1)
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT tether_sequence()").Scan(&n); err != nil {
		return 0, false
	}
	return n, true
}
