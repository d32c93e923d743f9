package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// benchSubmit measures job submissions through the registry, allowlist
// checks included, from concurrent producers (SQLite's group commit
// batches them; on PostgreSQL each is one statement: job, history, audit).
// Reports submits/s.
func benchSubmit(b *testing.B, h Bench) {
	reg, c, _ := benchRegistry(b, h)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := reg.SubmitJob(benchCtx, sub); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
}

// benchClaim measures acks (the atomic claim, with a lease) of queued
// jobs by concurrent agents. Reports claims/s.
func benchClaim(b *testing.B, h Bench) {
	reg, c, a := benchRegistry(b, h)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	ids := submitMany(b, reg, sub, b.N)
	elapsed := roundRobin(b, len(ids), func(i int) error { // each job once
		_, err := reg.AckJob(benchCtx, a, ids[i])
		return err
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
}

// benchIdleLook measures polls' looks at an empty queue (what an idle
// fleet's held polls do when they start and on every wake-up) from
// concurrent agents, with the visibility window on, as serve runs it.
// Reports looks/s.
func benchIdleLook(b *testing.B, h Bench) {
	reg, c, a := lookRegistry(b, h)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if jobs, err := reg.PollJobs(benchCtx, a, c.ID, 10); err != nil || len(jobs) != 0 {
				b.Errorf("look: %d jobs, %v", len(jobs), err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// benchBusyLook measures looks that each hand out one queued job, from
// concurrent agents, with the visibility window on. Reports looks/s.
func benchBusyLook(b *testing.B, h Bench) {
	reg, c, a := lookRegistry(b, h)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	submitMany(b, reg, sub, b.N)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := reg.PollJobs(benchCtx, a, c.ID, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// benchLeasedWrites runs write on the jobs of ids, round robin, from
// concurrent agents, and reports writes/s under unit+"/s" and, when the
// store tells it, the log the database wrote per write under
// "WAL-B/"+one.
func benchLeasedWrites(b *testing.B, h Bench, ids []string, unit, one string, write func(i int) error) {
	var walStart float64
	if h.WALBytes != nil {
		walStart = h.WALBytes(b)
	}
	elapsed := roundRobin(b, len(ids), write)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit+"/s")
	if h.WALBytes != nil {
		b.ReportMetric((h.WALBytes(b)-walStart)/float64(b.N), "WAL-B/"+one)
	}
}

// benchHeartbeat measures lease heartbeats, a fleet's most frequent write
// (every leased job, every interval), from concurrent agents over a
// thousand leased jobs. Reports heartbeats/s (and WAL bytes per
// heartbeat).
func benchHeartbeat(b *testing.B, h Bench) {
	reg, _, a := benchRegistry(b, h)
	ids, claims := leasedJobs(b, benchCtx, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, h, ids, "heartbeats", "heartbeat", func(i int) error {
		_, err := reg.HeartbeatJob(benchCtx, a, ids[i], claims[i])
		return err
	})
}

// benchStatusReport measures status reports (which renew the lease) from
// concurrent agents over a thousand leased jobs. Reports reports/s (and
// WAL bytes per report).
func benchStatusReport(b *testing.B, h Bench) {
	reg, _, a := benchRegistry(b, h)
	ids, claims := leasedJobs(b, benchCtx, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, h, ids, "reports", "report", func(i int) error {
		return reg.ReportStatus(benchCtx, a, ids[i], claims[i], registry.StatusReport{Phase: "Applying", Message: "applying"})
	})
}
