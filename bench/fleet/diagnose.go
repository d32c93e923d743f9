package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Where a wake-up's time goes. A delivered job's wake-up (from its submit's
// commit to its poll's answer at the agent) is split at the moment serve's
// poll looked for it: serve records that look in the job's visible_after
// (the look's clock plus the visibility window), so that, read back from the
// database after the run,
//
//	notice  = look - commit:  serve's change notifier and hub saw the
//	                          commit, woke the held poll, which checked its
//	                          credential again and began its look (or the
//	                          agent's next poll began, had it none held);
//	deliver = arrival - look: the look's write through serve's writer, the
//	                          answer written, and this process reading it.
//
// And the measuring side's own delay: schedProbe is how late this process
// runs a goroutine that asked to wake at a time, the floor of every arrival
// time it records.

// wakeRec is one delivered job's submit commit and arrival.
type wakeRec struct {
	id         string
	commit, at time.Time
}

// schedProbe samples this process's own scheduling delay: a goroutine that
// sleeps to the next 10 ms mark and records how late it woke.
type schedProbe struct {
	mu   sync.Mutex
	late []time.Duration
}

func (p *schedProbe) run(ctx context.Context) {
	const every = 10 * time.Millisecond
	t := time.NewTimer(every)
	defer t.Stop()
	next := time.Now().Add(every)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		p.mu.Lock()
		p.late = append(p.late, now.Sub(next))
		p.mu.Unlock()
		next = now.Add(every)
		t.Reset(every)
	}
}

func (p *schedProbe) percentiles() (p50, p99, worst time.Duration) {
	p.mu.Lock()
	s := slices.Clone(p.late)
	p.mu.Unlock()
	return pcts(s)
}

// pcts returns the p50, p99 and maximum of s (which it sorts).
func pcts(s []time.Duration) (p50, p99, worst time.Duration) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)], s[len(s)-1]
}

// wakeSplit is the wake-ups split at serve's look.
type wakeSplit struct {
	matched                       int
	noticeP50, noticeP99          time.Duration
	deliverP50, deliverP99        time.Duration
	worst                         []string // the slowest wake-ups, split
	buckets                       []string // p99 per 10 s of the steady state
	submitP50, submitP99, subWrst time.Duration
}

// splitWakeups reads each delivered job's look from the database and splits
// its wake-up there (see above).
func splitWakeups(ctx context.Context, db string, recs []wakeRec, steadyStart time.Time) (wakeSplit, error) {
	var out wakeSplit
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "query_only(1)")
	conn, err := sql.Open("sqlite", "file:"+(&url.URL{Path: db}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return out, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT id, created_at, visible_after FROM jobs WHERE visible_after IS NOT NULL")
	if err != nil {
		return out, err
	}
	type look struct{ created, look int64 }
	looks := map[string]look{}
	for rows.Next() {
		var id string
		var l look
		if err := rows.Scan(&id, &l.created, &l.look); err != nil {
			rows.Close()
			return out, err
		}
		l.look -= registry.DefaultVisibilityWindow.Milliseconds()
		looks[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	ms := func(v int64) time.Time { return time.UnixMilli(v) }
	var notice, deliver, submit []time.Duration
	type split struct {
		r                       wakeRec
		notice, deliver, submit time.Duration
	}
	var all []split
	byBucket := map[int][]time.Duration{}
	for _, r := range recs {
		l, ok := looks[r.id]
		if !ok {
			continue
		}
		s := split{r: r, notice: ms(l.look).Sub(r.commit), deliver: r.at.Sub(ms(l.look)), submit: r.commit.Sub(ms(l.created))}
		notice, deliver, submit = append(notice, s.notice), append(deliver, s.deliver), append(submit, s.submit)
		all = append(all, s)
		b := int(r.commit.Sub(steadyStart) / (10 * time.Second))
		byBucket[b] = append(byBucket[b], r.at.Sub(r.commit))
	}
	out.matched = len(all)
	out.noticeP50, out.noticeP99, _ = pcts(notice)
	out.deliverP50, out.deliverP99, _ = pcts(deliver)
	out.submitP50, out.submitP99, out.subWrst = pcts(submit)
	slices.SortFunc(all, func(a, b split) int { return int(b.r.at.Sub(b.r.commit) - a.r.at.Sub(a.r.commit)) })
	for _, s := range all[:min(10, len(all))] {
		out.worst = append(out.worst, fmt.Sprintf("%s committed at +%s: %s = notice %s + deliver %s",
			s.r.id, s.r.commit.Sub(steadyStart).Round(time.Millisecond), s.r.at.Sub(s.r.commit).Round(time.Millisecond),
			s.notice.Round(time.Millisecond), s.deliver.Round(time.Millisecond)))
	}
	keys := make([]int, 0, len(byBucket))
	for k := range byBucket {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p50, p99, worst := pcts(byBucket[k])
		out.buckets = append(out.buckets, fmt.Sprintf("+%3ds: %5d jobs, p50 %s, p99 %s, max %s", k*10, len(byBucket[k]),
			p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), worst.Round(time.Millisecond)))
	}
	return out, nil
}
