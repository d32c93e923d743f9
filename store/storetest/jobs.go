package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// SubmitCases is the producer table of PROTOCOL.md as test cases: for the
// suite's cluster (namespaces [team-a], catalog [nextcloud], templates
// [backup.velero]). Code is "" for an accepted submission.
var SubmitCases = []struct {
	Name    string
	Kind    registry.JobKind
	Payload string
	Code    registry.Code
	Target  string // for accepted ones
	Says    string // a phrase the error must contain
}{
	{"apply instance", "apply", applyPayload, "", "ApplicationInstance/team-a/nc", ""},
	{"apply configmap", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}`, "", "ConfigMap/team-a/c", ""},
	{"apply other namespace", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"kube-system"}}`, registry.CodeNamespaceNotAllowed, "", `namespace "kube-system"`},
	{"apply cluster-scoped", "apply", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`, registry.CodeNamespaceNotAllowed, "", "cluster-scoped"},
	{"apply catalog not allowed", "apply", `{"apiVersion":"a/v1","kind":"ApplicationInstance","metadata":{"name":"n","namespace":"team-a"},"spec":{"appRef":{"catalogId":"wordpress"}}}`, registry.CodeCatalogEntryNotAllowed, "", `catalog entry "wordpress"`},
	{"apply instance without catalog", "apply", `{"apiVersion":"a/v1","kind":"ApplicationInstance","metadata":{"name":"n","namespace":"team-a"},"spec":{}}`, registry.CodeInvalid, "", "catalogId"},
	{"apply missing kind", "apply", `{"apiVersion":"v1","metadata":{"name":"c","namespace":"team-a"}}`, registry.CodeInvalid, "", "kind"},
	{"apply wrong type", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":7}}`, registry.CodeInvalid, "", "metadata.namespace"},
	{"apply array", "apply", `[1,2]`, registry.CodeInvalid, "", "JSON object"},
	{"malformed JSON", "apply", `{"apiVersion":`, registry.CodeInvalid, "", "not valid JSON"},
	{"empty payload", "apply", ``, registry.CodeInvalid, "", "required"},
	{"delete", "delete", `{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`, "", "ConfigMap/team-a/c", ""},
	{"delete other namespace", "delete", `{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"prod"}`, registry.CodeNamespaceNotAllowed, "", `namespace "prod"`},
	{"delete missing name", "delete", `{"apiVersion":"v1","kind":"ConfigMap","namespace":"team-a"}`, registry.CodeInvalid, "", "name"},
	{"ensure instance", "intent", `{"intent":"ensure-application-instance","applicationInstance":` + applyPayload + `}`, "", "ApplicationInstance/team-a/nc", ""},
	{"ensure instance bad catalog", "intent", `{"intent":"ensure-application-instance","applicationInstance":{"apiVersion":"a/v1","kind":"ApplicationInstance","metadata":{"name":"n","namespace":"team-a"},"spec":{"appRef":{"catalogId":"evil"}}}}`, registry.CodeCatalogEntryNotAllowed, "", `catalog entry "evil"`},
	{"request backup", "intent", `{"intent":"request-operation","operation":{"apiVersion":"ops/v1","kind":"Operation","metadata":{"name":"b1","namespace":"team-a"},"spec":{"type":"Backup","engine":"velero","targetRef":{"name":"nc"}}}}`, "", "Operation/team-a/b1", ""},
	{"request template not allowed", "intent", `{"intent":"request-operation","operation":{"metadata":{"name":"r","namespace":"team-a"},"spec":{"type":"RunCommand","engine":"job","targetRef":{"name":"nc"}}}}`, registry.CodeOperationTemplateNotAllowed, "", `"runCommand.job"`},
	{"request without targetRef", "intent", `{"intent":"request-operation","operation":{"metadata":{"name":"b","namespace":"team-a"},"spec":{"type":"Backup","engine":"velero"}}}`, registry.CodeInvalid, "", "targetRef"},
	{"delete instance", "intent", `{"intent":"delete-application-instance","name":"nc","namespace":"team-a"}`, "", "ApplicationInstance/team-a/nc", ""},
	{"delete instance elsewhere", "intent", `{"intent":"delete-application-instance","name":"nc","namespace":"team-b"}`, registry.CodeNamespaceNotAllowed, "", `namespace "team-b"`},
	{"unknown intent", "intent", `{"intent":"launch-missiles"}`, registry.CodeInvalid, "", `intent "launch-missiles"`},
	{"missing intent", "intent", `{"name":"x"}`, registry.CodeInvalid, "", "intent field"},
	{"unknown kind", "patch", `{"a":1}`, registry.CodeInvalid, "", `job kind "patch"`},
}

func testSubmit(t *testing.T, newStore NewStore) {
	t.Run("ProducerTable", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		for _, tc := range SubmitCases {
			t.Run(tc.Name, func(t *testing.T) {
				j, created, err := e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: tc.Kind, Payload: json.RawMessage(tc.Payload)})
				if tc.Code != "" {
					wantCode(t, err, tc.Code)
					if !strings.Contains(err.Error(), tc.Says) {
						t.Fatalf("error %q does not say %q", err, tc.Says)
					}
					return
				}
				wantNoErr(t, err)
				if !created || j.State != registry.JobQueued || j.Attempt != 1 || j.Target.String() != tc.Target {
					t.Fatalf("job created=%v state=%s attempt=%d target=%s, want queued 1 %s", created, j.State, j.Attempt, j.Target, tc.Target)
				}
			})
		}
	})

	t.Run("WildcardsAllow", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("open", func(s *registry.ClusterSpec) {
			s.AllowedNamespaces = []string{"*"}
			s.AllowedCatalogEntries = []string{"*"}
			s.AllowedOperationTemplates = []string{"*"}
		})
		for _, p := range []string{
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`,
			`{"apiVersion":"a/v1","kind":"ApplicationInstance","metadata":{"name":"n","namespace":"any"},"spec":{"appRef":{"catalogId":"whatever"}}}`,
		} {
			_, _, err := e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(p)})
			wantNoErr(t, err)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		_, _, err := e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(applyPayload), ExpiresIn: time.Millisecond})
		wantCode(t, err, registry.CodeInvalid)
		j := e.submit(c.ID, func(s *registry.JobSubmission) { s.ExpiresIn = 15 * time.Minute })
		if !j.ExpiresAt.Equal(e.clock.Now().Add(15 * time.Minute)) {
			t.Fatalf("expiresAt = %s", j.ExpiresAt)
		}
	})
}

func testJobs(t *testing.T, newStore NewStore) {
	t.Run("PollOrderLimitAndExpiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		other, _ := e.agent("other")
		var ids []string
		for i := range 5 {
			j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) {
				if i == 2 {
					s.ExpiresIn = time.Minute
				}
			})
			ids = append(ids, j.ID)
			e.clock.Advance(time.Second)
		}
		e.submit(other.Cluster.ID, nil)
		jobs, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 3)
		wantNoErr(t, err)
		if got := jobIDs(jobs); strings.Join(got, ",") != strings.Join(ids[:3], ",") {
			t.Fatalf("poll = %v, want the oldest three %v", got, ids[:3])
		}
		e.clock.Advance(2 * time.Minute)
		jobs, _ = e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10)
		if got := jobIDs(jobs); len(got) != 4 || strings.Contains(strings.Join(got, ","), ids[2]) {
			t.Fatalf("poll after expiry = %v: the expired job must not be handed out", got)
		}
		_, err = e.reg.PollJobs(e.ctx, a, other.Cluster.ID, 10)
		wantCode(t, err, registry.CodeForbidden)
	})

	t.Run("ExactlyOneOfConcurrentAcks", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		const n = 20
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.reg.AckJob(e.ctx, a, j.ID)
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		wins := 0
		for err := range errs {
			if err == nil {
				wins++
				continue
			}
			wantCode(t, err, registry.CodeAlreadyClaimed)
		}
		if wins != 1 {
			t.Fatalf("%d of %d concurrent acks won, want exactly 1", wins, n)
		}
		if got := e.counts(a.Cluster.ID); got[registry.JobInProgress] != 1 || got[registry.JobQueued] != 0 {
			t.Fatalf("counts after ack = %v", got)
		}
	})

	t.Run("AckRefusals", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		b, _ := e.agent("other")
		_, err := e.reg.AckJob(e.ctx, a, "j-nope")
		wantCode(t, err, registry.CodeJobNotFound)
		bj := e.submit(b.Cluster.ID, nil)
		_, err = e.reg.AckJob(e.ctx, a, bj.ID)
		wantCode(t, err, registry.CodeForbidden)
		if e.job(bj.ID).State != registry.JobQueued {
			t.Fatal("a foreign ack changed the job")
		}
		exp := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Minute })
		e.clock.Advance(time.Minute)
		_, err = e.reg.AckJob(e.ctx, a, exp.ID)
		wantCode(t, err, registry.CodeJobClosed)
		// The public operator acks an expired job and then reports noop.
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, exp.ID, "", registry.ResultReport{Outcome: registry.OutcomeNoop, Error: "expired"})))
		if got := e.job(exp.ID); got.State != registry.JobNoop || got.Error != "expired" {
			t.Fatalf("expired job after noop: %s %q", got.State, got.Error)
		}
		done := e.submit(a.Cluster.ID, nil)
		_, err = e.reg.AckJob(e.ctx, a, done.ID)
		wantNoErr(t, err)
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, done.ID, "", registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
		_, err = e.reg.AckJob(e.ctx, a, done.ID)
		wantCode(t, err, registry.CodeJobClosed)
	})

	t.Run("LeaseOnlyForLeaseClients", func(t *testing.T) {
		e := newEnv(t, newStore)
		plain, _ := e.agent("plain")
		leased, _ := e.agent("leased", registry.CapabilityLease)
		noLeaseCluster, tok := e.cluster("no-lease-policy", func(s *registry.ClusterSpec) { s.Policy.LeaseSeconds = 0 })
		off, _ := e.register(tok, registry.CapabilityLease)
		for _, tc := range []struct {
			a     *registry.Agent
			lease bool
		}{{plain, false}, {leased, true}, {off, false}} {
			j := e.submit(tc.a.Cluster.ID, nil)
			claim, err := e.reg.AckJob(e.ctx, tc.a, j.ID)
			wantNoErr(t, err)
			if got := !claim.LeaseExpiresAt.IsZero(); got != tc.lease || claim.ClaimID == "" {
				t.Fatalf("%s: lease=%v claim=%q, want lease=%v and a claim id", tc.a.Cluster.Name, got, claim.ClaimID, tc.lease)
			}
			if tc.lease && !claim.LeaseExpiresAt.Equal(e.clock.Now().Add(60*time.Second)) {
				t.Fatalf("lease ends %s, want now+60s", claim.LeaseExpiresAt)
			}
		}
		_ = noLeaseCluster
	})

	t.Run("StatusHeartbeatRenewLease", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(40 * time.Second)
		until, err := e.reg.HeartbeatJob(e.ctx, a, j.ID, claim.ClaimID)
		wantNoErr(t, err)
		if !until.Equal(e.clock.Now().Add(60 * time.Second)) {
			t.Fatalf("heartbeat lease end %s, want now+60s", until)
		}
		e.clock.Advance(40 * time.Second)
		cond := registry.Condition{Type: "Reconciling", Status: "True", Reason: "Upgrading"}
		wantNoErr(t, e.reg.ReportStatus(e.ctx, a, j.ID, "", registry.StatusReport{Phase: "Reconciling", Message: "upgrading", Conditions: []registry.Condition{cond}}))
		got := e.job(j.ID)
		if !got.LeaseExpiresAt.Equal(e.clock.Now().Add(60*time.Second)) || got.Phase != "Reconciling" || !got.LastActivityAt.Equal(e.clock.Now()) {
			t.Fatalf("after status: lease %s phase %q activity %s", got.LeaseExpiresAt, got.Phase, got.LastActivityAt)
		}
		h, _ := e.reg.JobHistory(e.ctx, j.ID)
		if len(h) != 3 || h[0].Type != registry.HistorySubmitted || h[1].Type != registry.HistoryClaimed || h[2].Type != registry.HistoryStatus {
			t.Fatalf("timeline = %v", historyTypes(h))
		}
		if len(h[2].Conditions) != 1 || h[2].Conditions[0].Reason != "Upgrading" || h[2].Message != "upgrading" {
			t.Fatalf("status entry = %+v", h[2])
		}
	})

	t.Run("ResultExactlyOnce", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, "", registry.ResultReport{Outcome: "exploded"})
		wantCode(t, err, registry.CodeInvalidOutcome)
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeFailed})
		wantCode(t, err, registry.CodeErrorRequired)
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeConflict, Error: "  "})
		wantCode(t, err, registry.CodeErrorRequired)
		body := json.RawMessage(`{"outcome":"failed","error":"chart repository unreachable"}`)
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "chart repository unreachable", Body: body})))
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeSucceeded})
		wantCode(t, err, registry.CodeResultAlreadyRecorded)
		got := e.job(j.ID)
		if got.State != registry.JobFailed || got.Error != "chart repository unreachable" || string(got.Result) != string(body) || got.FinishedAt.IsZero() {
			t.Fatalf("finished job = %s %q %s", got.State, got.Error, got.Result)
		}
		err = e.reg.ReportStatus(e.ctx, a, j.ID, "", registry.StatusReport{Phase: "late"})
		wantCode(t, err, registry.CodeJobClosed)
		// Concurrent results: exactly one is recorded.
		j2 := e.submit(a.Cluster.ID, nil)
		_, err = e.reg.AckJob(e.ctx, a, j2.ID)
		wantNoErr(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- errOf(e.reg.ReportResult(e.ctx, a, j2.ID, "", registry.ResultReport{Outcome: registry.OutcomeSucceeded, Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
			}()
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			if err == nil {
				ok++
			} else {
				wantCode(t, err, registry.CodeResultAlreadyRecorded)
			}
		}
		if ok != 1 {
			t.Fatalf("%d concurrent results recorded, want 1", ok)
		}
		// Only a noop result is taken for a job never acked.
		j3 := e.submit(a.Cluster.ID, nil)
		_, err = e.reg.ReportResult(e.ctx, a, j3.ID, "", registry.ResultReport{Outcome: registry.OutcomeSucceeded})
		wantCode(t, err, registry.CodeStaleClaim)
	})

	t.Run("FencingAndRequeue", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		first, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		err = e.reg.ReportStatus(e.ctx, a, j.ID, "fc-not-mine", registry.StatusReport{Phase: "x"})
		wantCode(t, err, registry.CodeStaleClaim)
		requeued, err := e.reg.RequeueJob(e.ctx, j.ID, "holder wedged")
		wantNoErr(t, err)
		if requeued.State != registry.JobQueued || requeued.Attempt != 2 || requeued.ClaimID != "" || requeued.Leased() {
			t.Fatalf("requeued job = %s attempt %d claim %q", requeued.State, requeued.Attempt, requeued.ClaimID)
		}
		err = e.reg.ReportStatus(e.ctx, a, j.ID, first.ClaimID, registry.StatusReport{Phase: "x"})
		wantCode(t, err, registry.CodeStaleClaim)
		second, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		if second.ClaimID == first.ClaimID {
			t.Fatal("a new claim reused the old fencing token")
		}
		_, err = e.reg.HeartbeatJob(e.ctx, a, j.ID, first.ClaimID)
		wantCode(t, err, registry.CodeStaleClaim)
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, first.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
		wantCode(t, err, registry.CodeStaleClaim)
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, second.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
		_, err = e.reg.RequeueJob(e.ctx, j.ID, "")
		wantCode(t, err, registry.CodeConflict) // finished jobs keep their result
		rq := e.auditFor(registry.AuditJobRequeue)
		if len(rq) != 1 || !strings.Contains(rq[0].Reason, "fenced") || !strings.Contains(rq[0].Reason, "holder wedged") {
			t.Fatalf("requeue audit = %+v", rq)
		}
	})

	// A job requeued past its expiry would expire at once: the verdict says
	// so beforehand, and a requeue that extends the expiry moves it in the
	// same statement, audited.
	t.Run("RequeuePastExpiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		late := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = 5 * time.Minute })
		left := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = 5 * time.Minute })
		forever := e.submit(a.Cluster.ID, nil)
		for _, j := range []*registry.Job{late, left, forever} {
			_, err := e.reg.AckJob(e.ctx, a, j.ID)
			wantNoErr(t, err)
		}
		e.clock.Advance(10 * time.Minute)
		got, err := e.reg.GetJob(e.ctx, late.ID)
		wantNoErr(t, err)
		if !got.ExpiresOnRequeue(e.clock.Now()) {
			t.Fatal("a job 5m past its expiry: ExpiresOnRequeue is false")
		}
		_, err = e.reg.RequeueJobWith(e.ctx, late.ID, registry.RequeueOptions{ExtendExpiry: time.Millisecond})
		wantCode(t, err, registry.CodeInvalid)
		requeued, err := e.reg.RequeueJobWith(e.ctx, late.ID, registry.RequeueOptions{Reason: "agent wedged", ExtendExpiry: time.Hour})
		wantNoErr(t, err)
		if want := e.clock.Now().Add(time.Hour); !requeued.ExpiresAt.Equal(want) || requeued.State != registry.JobQueued {
			t.Fatalf("requeued with an extension: %s, expires %s, want queued, expires %s", requeued.State, requeued.ExpiresAt, want)
		}
		if requeued.ExpiresOnRequeue(e.clock.Now()) {
			t.Fatal("the extended job still expires at once")
		}
		plain, err := e.reg.RequeueJob(e.ctx, left.ID, "")
		wantNoErr(t, err)
		if !plain.ExpiresAt.Equal(left.ExpiresAt) {
			t.Fatalf("a requeue without an extension moved the expiry to %s", plain.ExpiresAt)
		}
		none, err := e.reg.RequeueJobWith(e.ctx, forever.ID, registry.RequeueOptions{ExtendExpiry: time.Hour})
		wantNoErr(t, err)
		if !none.ExpiresAt.IsZero() {
			t.Fatalf("a job without an expiry got one: %s", none.ExpiresAt)
		}
		jobs, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 0)
		wantNoErr(t, err)
		if ids := strings.Join(jobIDs(jobs), ","); !strings.Contains(ids, late.ID) || strings.Contains(ids, left.ID) {
			t.Fatalf("poll after the requeues = %s: want the extended job, not the expired one", ids)
		}
		rq := e.auditFor(registry.AuditJobRequeue)
		extended := 0
		for _, a := range rq {
			if strings.Contains(a.Reason, "expiry extended") {
				extended++
			}
		}
		if len(rq) != 3 || extended != 1 {
			t.Fatalf("requeue audit = %+v, want three, one saying the expiry was extended", rq)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		running := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, running.ID)
		wantNoErr(t, err)
		queued := e.submit(a.Cluster.ID, nil)
		for _, id := range []string{running.ID, queued.ID} {
			c, err := e.reg.CancelJob(e.ctx, id, "wrong chart")
			wantNoErr(t, err)
			if c.State != registry.JobCanceled || c.Leased() {
				t.Fatalf("canceled job state %s leased %v", c.State, c.Leased())
			}
		}
		for _, err := range []error{
			e.reg.ReportStatus(e.ctx, a, running.ID, claim.ClaimID, registry.StatusReport{}),
			errOf(e.reg.ReportResult(e.ctx, a, running.ID, "", registry.ResultReport{Outcome: registry.OutcomeSucceeded})),
			func() error { _, err := e.reg.HeartbeatJob(e.ctx, a, running.ID, ""); return err }(),
		} {
			wantCode(t, err, registry.CodeJobCanceled)
		}
		_, err = e.reg.AckJob(e.ctx, a, queued.ID)
		wantCode(t, err, registry.CodeJobClosed)
		_, err = e.reg.CancelJob(e.ctx, queued.ID, "")
		wantCode(t, err, registry.CodeConflict)
		if got := e.counts(a.Cluster.ID); got[registry.JobCanceled] != 2 || got[registry.JobQueued] != 0 || got[registry.JobInProgress] != 0 {
			t.Fatalf("counts = %v", got)
		}
	})

	t.Run("ExtendLease", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		got, err := e.reg.ExtendLease(e.ctx, j.ID, 10*time.Minute)
		wantNoErr(t, err)
		if !got.LeaseExpiresAt.Equal(claim.LeaseExpiresAt.Add(10 * time.Minute)) {
			t.Fatalf("extended lease ends %s", got.LeaseExpiresAt)
		}
		plain, _ := e.agent("plain")
		pj := e.submit(plain.Cluster.ID, nil)
		_, err = e.reg.AckJob(e.ctx, plain, pj.ID)
		wantNoErr(t, err)
		_, err = e.reg.ExtendLease(e.ctx, pj.ID, time.Minute)
		wantCode(t, err, registry.CodeConflict)
	})

	t.Run("ListAndCount", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		for i := range 6 {
			j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = fmt.Sprintf("key-%d", i) })
			if i < 2 {
				_, err := e.reg.AckJob(e.ctx, a, j.ID)
				wantNoErr(t, err)
			}
			e.clock.Advance(time.Second)
		}
		p := registry.JobListParams{ClusterIDs: []string{a.Cluster.ID}, States: []registry.JobState{registry.JobQueued}}
		list, err := e.reg.ListJobs(e.ctx, p)
		wantNoErr(t, err)
		n, err := e.reg.CountJobs(e.ctx, p)
		wantNoErr(t, err)
		if len(list) != 4 || n != 4 || !list[0].CreatedAt.After(list[3].CreatedAt) {
			t.Fatalf("queued list %d count %d, newest first", len(list), n)
		}
		page, _ := e.reg.ListJobs(e.ctx, registry.JobListParams{Limit: 2, Offset: 2, OldestFirst: true})
		if len(page) != 2 || page[0].IdempotencyKey != "key-2" {
			t.Fatalf("page = %v", jobIDs(page))
		}
		found, _ := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: "key-5"})
		if len(found) != 1 || found[0].IdempotencyKey != "key-5" {
			t.Fatalf("search found %d", len(found))
		}
		if got := e.counts(a.Cluster.ID); got[registry.JobQueued] != 4 || got[registry.JobInProgress] != 2 {
			t.Fatalf("counts = %v", got)
		}
		_, err = e.reg.ListJobs(e.ctx, registry.JobListParams{States: []registry.JobState{"bogus"}})
		wantCode(t, err, registry.CodeInvalid)
	})

	// Search is words: each must match the id, idempotency key, target
	// namespace or name, or error (the console's jobs filter "team-b
	// wordpress" matched nothing when the words were one substring, and
	// a job's error text could not be found at all).
	t.Run("SearchWords", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		web := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "team-b/wordpress@1" })
		e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "team-a/wordpress@2" })
		e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "team-b/gitea@3" })
		claim, err := e.reg.AckJob(e.ctx, a, web.ID)
		wantNoErr(t, err)
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, web.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "HelmReleaseFailed: chart repository unreachable"})))
		for _, c := range []struct {
			search string
			want   int
		}{
			{"team-b wordpress", 1},
			{"  wordpress   team-b ", 1},
			{"wordpress", 2},
			{"team-b", 2},
			{"UNREACHABLE", 1},
			{"helmreleasefailed team-b", 1},
			{"unreachable gitea", 0},
		} {
			found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: c.search})
			wantNoErr(t, err)
			n, err := e.reg.CountJobs(e.ctx, registry.JobListParams{Search: c.search})
			wantNoErr(t, err)
			if len(found) != c.want || n != c.want {
				t.Errorf("search %q: listed %d, counted %d, want %d", c.search, len(found), n, c.want)
			}
		}
		// A search of too many words is refused, not a store failure
		// (SQLite refused the query of a thousand words as too deep).
		many := strings.Repeat("team-b ", 1000)
		_, err = e.reg.ListJobs(e.ctx, registry.JobListParams{Search: many})
		wantCode(t, err, registry.CodeInvalid)
		_, err = e.reg.CountJobs(e.ctx, registry.JobListParams{Search: many})
		wantCode(t, err, registry.CodeInvalid)
		found, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: strings.Repeat("team-b ", registry.MaxSearchWords)})
		wantNoErr(t, err)
		if len(found) != 2 {
			t.Errorf("a search of %d words found %d jobs, want 2", registry.MaxSearchWords, len(found))
		}
	})

	// A search word also matches the CLUSTER and KIND columns: the
	// console's /staging-eu found nothing (only cluster:staging-eu did),
	// since the jobs table holds the cluster's id, not its name. The
	// registry resolves the names among the clusters the caller may see.
	t.Run("SearchClusterAndKind", func(t *testing.T) {
		e := newEnv(t, newStore)
		staging, _ := e.cluster("staging-eu", nil)
		prod, _ := e.cluster("prod-us", func(s *registry.ClusterSpec) { s.Organization = "globex" })
		del := func(s *registry.JobSubmission) {
			s.Kind = registry.KindDelete
			s.Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"wordpress","namespace":"team-a"}`)
		}
		for _, c := range []*registry.Cluster{staging, prod} {
			e.submit(c.ID, nil)
			e.submit(c.ID, del)
		}
		scoped := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "viewer-org", Role: registry.RoleViewer, Org: "org"})
		for _, c := range []struct {
			ctx    context.Context
			search string
			want   int
		}{
			{e.ctx, "staging-eu", 2}, // only the cluster's name
			{e.ctx, "STAGING", 2},    // in any case
			{e.ctx, "delete", 2},     // only the kind
			{e.ctx, "staging-eu delete", 1},
			{e.ctx, "staging-eu wordpress", 1}, // the cluster and the target
			{e.ctx, "wordpress prod-us", 1},
			{e.ctx, "staging-eu prod-us", 0},
			{e.ctx, "nosuch-cluster", 0},
			{scoped, "staging-eu", 2},
			{scoped, "prod-us", 0}, // another organization's cluster
		} {
			found, err := e.reg.ListJobs(c.ctx, registry.JobListParams{Search: c.search})
			wantNoErr(t, err)
			n, err := e.reg.CountJobs(c.ctx, registry.JobListParams{Search: c.search})
			wantNoErr(t, err)
			if len(found) != c.want || n != c.want {
				t.Errorf("search %q: listed %d, counted %d, want %d", c.search, len(found), n, c.want)
			}
		}
	})

	t.Run("WakeUpOnSubmit", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		b, _ := e.agent("other")
		wake, stop, err := e.reg.SubscribeJobs(a.Cluster.ID)
		wantNoErr(t, err)
		defer stop()
		e.submit(b.Cluster.ID, nil)
		e.submit(a.Cluster.ID, nil)
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatal("no wake-up within 10s of a submission")
		}
	})
}

func jobIDs(jobs []registry.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func historyTypes(h []registry.JobHistoryEntry) []registry.HistoryType {
	var out []registry.HistoryType
	for _, e := range h {
		out = append(out, e.Type)
	}
	return out
}
