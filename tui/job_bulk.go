package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// Bulk actions over a whole tab as filtered (A, then R, C, F or D): the tab
// may hold a million jobs, so nothing loads them. The console first counts,
// in the background, what the action will act on and what it will skip, by
// state (the registry's rules: registry.JobAction); one confirmation names
// both; then a background run pages through the jobs the action applies to
// (the registry's filters for it, keyset pages, oldest first) and acts on
// each with its own registry operation, each audited, while the status line
// counts the progress. The UI never waits on it.

// bulkScope is the jobs a bulk action is over: the union of queries.
type bulkScope struct {
	what    string // for messages: "the failed tab, /cluster:prod-eu-1"
	queries []registry.JobListParams
	stuck   bool // the stuck tab: overlapping queries, counted by reading
}

// scope is the current tab as filtered.
func (v *jobsView) scope() bulkScope {
	s := bulkScope{what: "the " + jobTabLabels[v.tab] + " tab"}
	if v.filter != "" {
		s.what += ", /" + v.filter
	}
	if v.fl.err != "" {
		return s
	}
	base := v.base()
	if base.States != nil && len(base.States) == 0 {
		return s // the filter leaves no state (failed !failed)
	}
	base.OldestFirst, base.Limit, base.Offset, base.After = true, 0, 0, nil
	if v.tab == tabStuck {
		s.stuck = true
		s.queries = registry.StuckJobQueries(base, v.ctx.Fleet.unreachable(v.ctx.Now), v.ctx.Now).Sets
		return s
	}
	if states, ok := registry.IntersectStates(tabStates(v.tab), base.States); ok {
		base.States = states
		s.queries = []registry.JobListParams{base}
	}
	return s
}

// bulkPlan is what a bulk action will do: act on act of total jobs, skip
// the rest, counted by why.
type bulkPlan struct {
	total, act int
	skipped    []skipCount
	// expiring counts the jobs to requeue that would expire at once
	// (registry.Job.ExpiresOnRequeue).
	expiring int
}

type skipCount struct {
	why string
	n   int
}

func (p *bulkPlan) skip(why string, n int) {
	if n == 0 {
		return
	}
	p.total += n
	for i := range p.skipped {
		if p.skipped[i].why == why {
			p.skipped[i].n += n
			return
		}
	}
	p.skipped = append(p.skipped, skipCount{why, n})
}

func (p *bulkPlan) skippedText() string {
	var parts []string
	for _, s := range p.skipped {
		parts = append(parts, thousands(int64(s.n))+" "+s.why)
	}
	return strings.Join(parts, ", ")
}

// bulkPage is how many jobs a bulk action reads at a time.
const bulkPage = 200

// planBulk counts what action would do over scope: by state through the
// store's counts for a state tab, by reading the jobs for the stuck tab
// (its queries overlap; it is short).
// now is the console's clock, which says which jobs would expire at once.
func planBulk(cx context.Context, b Backend, action registry.JobAction, s bulkScope, now time.Time) (bulkPlan, error) {
	var plan bulkPlan
	if s.stuck {
		err := eachJob(cx, b, s.queries, 0, func(j *registry.Job) (bool, bool) {
			if action.Applies(j) {
				plan.act++
				plan.total++
			} else {
				plan.skip(stateLabel(j.State), 1)
			}
			return false, true
		})
		return plan, err
	}
	for _, q := range s.queries {
		states := q.States
		if len(states) == 0 {
			states = registry.JobStates
		}
		for _, st := range states {
			p := q
			p.States = []registry.JobState{st}
			n, err := b.CountJobs(cx, p)
			if err != nil || n == 0 {
				if err != nil {
					return plan, err
				}
				continue
			}
			probe := registry.Job{State: st}
			switch {
			case action == registry.ActionRequeue && st == registry.JobFailed:
				// Only those whose last attempt's lease ran out.
				out := 0
				if q.Error == "" || q.Error == registry.ErrorLeaseExpired {
					p.Error = registry.ErrorLeaseExpired
					if out, err = b.CountJobs(cx, p); err != nil {
						return plan, err
					}
				}
				plan.act += out
				plan.total += out
				plan.skip("failed with attempts left", n-out)
			case action.Applies(&probe):
				plan.act += n
				plan.total += n
			default:
				plan.skip(stateLabel(st), n)
			}
		}
	}
	if action == registry.ActionRequeue && plan.act > 0 {
		return plan, countExpiring(cx, b, s, now, &plan)
	}
	return plan, nil
}

// countExpiring counts the jobs a requeue would act on that would expire
// at once: read, since the expiry is no count the store keeps (a requeue
// acts on jobs in progress or out of attempts, a short list).
func countExpiring(cx context.Context, b Backend, s bulkScope, now time.Time, plan *bulkPlan) error {
	var queries []registry.JobListParams
	for _, q := range s.queries {
		queries = append(queries, registry.ActionRequeue.Filters(q)...)
	}
	return eachJob(cx, b, queries, 0, func(j *registry.Job) (bool, bool) {
		if j.ExpiresOnRequeue(now) {
			plan.expiring++
		}
		return false, true
	})
}

// eachJob calls f on every job of the queries' union, oldest first, each
// once, until f says stop or limit jobs were seen (0: no limit). f says
// whether the job left the list (the action moved it out: requeued,
// canceled, deleted), so that the next page starts after the jobs that are
// still there: offset pages that work over the admin API as well, and that
// skip no job when the ones before it leave as the action goes.
func eachJob(cx context.Context, b Backend, queries []registry.JobListParams, limit int, f func(*registry.Job) (left, more bool)) error {
	seen := map[string]bool{}
	for _, q := range queries {
		offset := 0
		for {
			p := q
			p.OldestFirst, p.After, p.Limit, p.Offset = true, nil, bulkPage, offset
			jobs, err := b.ListJobs(cx, p)
			if err != nil {
				return err
			}
			stay := 0
			for i := range jobs {
				j := &jobs[i]
				if seen[j.ID] {
					stay++
					continue
				}
				seen[j.ID] = true
				left, more := f(j)
				if !left {
					stay++
				}
				if !more || (limit > 0 && len(seen) >= limit) {
					return nil
				}
			}
			if len(jobs) < bulkPage {
				break
			}
			offset += stay
		}
	}
	return nil
}

// bulkProgress counts a running bulk action, for the status line. stop
// asks it to stop (esc): it finishes the job in hand and acts on no other.
type bulkProgress struct {
	total        int
	done, failed atomic.Int64
	stop         atomic.Bool
	mu           sync.Mutex
	first        error // the first failure
	firstID      string
}

// seen is how many jobs it acted on, done or failed.
func (p *bulkProgress) seen() int64 { return p.done.Load() + p.failed.Load() }

func (p *bulkProgress) String() string {
	s := fmt.Sprintf("%s of %s", thousands(p.seen()), thousands(int64(p.total)))
	if f := p.failed.Load(); f > 0 {
		s += fmt.Sprintf(", %s failed", thousands(f))
	}
	if p.stop.Load() {
		s += ", stopping"
	}
	return s
}

func (p *bulkProgress) fail(id string, err error) {
	p.failed.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first == nil {
		p.first, p.firstID = err, id
	}
}

// bulkVerbs are each action's words: what is running, what was done.
var bulkVerbs = map[registry.JobAction][2]string{
	registry.ActionRequeue: {"requeue", "requeued"},
	registry.ActionCancel:  {"cancel", "canceled"},
	registry.ActionRetry:   {"retry", "retried"},
	registry.ActionDelete:  {"delete", "deleted"},
}

// bulkWhat says what the action does to each job.
var bulkWhat = map[registry.JobAction]string{
	registry.ActionRequeue: "Each goes back to the queue as a new attempt and its holder is fenced off (its claim no longer matches).",
	registry.ActionCancel:  "Each ends as canceled; an agent holding one is told to stop on its next call.",
	registry.ActionRetry:   "Each is submitted again as a new job with the same payload, linked to it; the original stays as it ended.",
	registry.ActionDelete:  "Each is deleted with its timeline, for good; the audit trail keeps the delete.",
}

// bulkJobs counts what action would do over the scope in the background,
// then asks once, then runs it in the background with its progress in the
// status line.
func bulkJobs(ctx *Context, action registry.JobAction, s bulkScope) tea.Cmd {
	if len(s.queries) == 0 {
		return failed("nothing to " + bulkVerbs[action][0] + ": no job can be in " + s.what)
	}
	b, now := ctx.Backend, ctx.Now
	verb := bulkVerbs[action]
	return runAction("count the jobs to "+verb[0], func(cx context.Context) outcome {
		plan, err := planBulk(cx, b, action, s, now)
		if err != nil {
			return outcome{err: err}
		}
		if plan.act == 0 {
			msg := fmt.Sprintf("none of the %s jobs in %s can be %s: %s", thousands(int64(plan.total)), s.what, verb[1], action.Rule())
			if plan.total == 0 {
				msg = "no job in " + s.what + " to " + verb[0]
			}
			return outcome{err: registry.Errorf(registry.CodeConflict, "%s", msg)}
		}
		title := fmt.Sprintf("%s %s?", strings.ToUpper(verb[0][:1])+verb[0][1:], plural(plan.act, "job", "jobs"))
		body := fmt.Sprintf("%s of the %s jobs in %s can be %s. %s", thousands(int64(plan.act)), thousands(int64(plan.total)), s.what, verb[1], bulkWhat[action])
		if len(plan.skipped) > 0 {
			body += fmt.Sprintf(" Skipped: %s (%s).", plan.skippedText(), action.Rule())
		}
		if plan.expiring > 0 {
			body += fmt.Sprintf(" ⚠ %s of the %s are past their expiry or within a minute of it: requeued as they are, they expire at once. e requeues them all with those expiries moved to %s from now.",
				thousands(int64(plan.expiring)), thousands(int64(plan.act)), humanDuration(requeueExpiryExtension))
		}
		body += " Each job is its own registry operation, audited; they run in the background with their progress in the status line, and esc stops them between two jobs."
		run := runBulk(b, action, s, plan, 0)
		var alt *confirmAlt
		if plan.expiring > 0 {
			alt = extendChoice(plan.expiring, func(extend time.Duration) tea.Cmd { return runBulk(b, action, s, plan, extend) })
		}
		// "cancel them": the dialog's own way out is also called cancel.
		return outcome{then: []tea.Msg{confirmMsg{title: title, body: body, yes: verb[0] + " them", danger: action != registry.ActionRetry, run: run, alt: alt}}}
	})
}

// runBulk acts on at most plan.act jobs of the scope (those the action
// applies to now: what changed since the count is left alone).
// A requeue extends the expiry of each job that would expire at once by
// extend (0: none).
func runBulk(b Backend, action registry.JobAction, s bulkScope, plan bulkPlan, extend time.Duration) tea.Cmd {
	verb := bulkVerbs[action]
	progress := &bulkProgress{total: plan.act}
	var queries []registry.JobListParams
	for _, q := range s.queries {
		queries = append(queries, action.Filters(q)...)
	}
	byID := map[registry.JobAction]func(context.Context, string, string) (*registry.Job, error){
		registry.ActionCancel: b.CancelJob, registry.ActionRetry: b.RetryJob, registry.ActionDelete: b.DeleteJob,
	}[action]
	op := func(cx context.Context, j *registry.Job, reason string) (*registry.Job, error) {
		return byID(cx, j.ID, reason)
	}
	if action == registry.ActionRequeue {
		// Each job at the attempt it was listed at: one that moved on since
		// (the reaper requeued it and an agent took it again) is refused by
		// the registry, not its new holder fenced off.
		op = func(cx context.Context, j *registry.Job, reason string) (*registry.Job, error) {
			return b.RequeueJobWith(cx, j.ID, registry.RequeueOptions{Reason: reason, ExtendExpiry: extend, Attempt: j.Attempt})
		}
	}
	reason := verb[1] + " from the console (bulk, " + s.what + ")"
	label := fmt.Sprintf("%s %s", verb[0], plural(plan.act, "job", "jobs"))
	return func() tea.Msg {
		return runActionMsg{label: label, progress: progress, long: true, fn: func(cx context.Context) outcome {
			err := eachJob(cx, b, queries, plan.act, func(j *registry.Job) (bool, bool) {
				if progress.stop.Load() {
					return false, false // esc: between two jobs
				}
				if !action.Applies(j) {
					return false, true // changed since it was listed
				}
				one, cancel := context.WithTimeout(cx, actionTimeout)
				defer cancel()
				if _, err := op(one, j, reason); err != nil {
					progress.fail(j.ID, err)
					return false, cx.Err() == nil
				}
				progress.done.Add(1)
				// A retried job stays as it ended; the others leave the list.
				return action != registry.ActionRetry, cx.Err() == nil
			})
			done, bad := progress.done.Load(), progress.failed.Load()
			clear := []tea.Msg{unmarkJobsMsg{all: true}}
			stopped := ""
			if progress.stop.Load() {
				stopped = fmt.Sprintf(", stopped (esc) after %s of %s", thousands(progress.seen()), thousands(int64(plan.act)))
			}
			switch {
			case err != nil:
				return outcome{err: fmt.Errorf("%s %s, then stopped: %w", verb[1], plural(int(done), "job", "jobs"), err), then: clear}
			case bad > 0:
				return outcome{err: bulkError(progress.first, "%s %s; %s failed, first: %s: %s%s", verb[1], plural(int(done), "job", "jobs"),
					thousands(bad), progress.firstID, errText(progress.first), stopped), then: clear}
			}
			return outcome{ok: fmt.Sprintf("%s %s in %s%s", verb[1], plural(int(done), "job", "jobs"), s.what, stopped), then: clear}
		}}
	}
}
