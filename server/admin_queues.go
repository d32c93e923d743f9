package server

import (
	"net/http"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Queue health (registry.QueueHealth) has resources of its own rather than a
// place in /stats or in the cluster record: /stats is what the remote
// console reads for counts, its clock and the feed position, and must stay
// one counter read; the record's ETag is its version, which these figures
// do not change.

func (s *Server) adminQueueHealth(c *call) error {
	q, err := s.reg.QueueHealth(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, q)
}

// adminFleetQueueHealth lists every visible cluster's queue, in cluster name
// order, in one page (a fleet's clusters fit in memory, as /clusters does).
func (s *Server) adminFleetQueueHealth(c *call) error {
	queues, err := s.reg.FleetQueueHealth(c.ctx)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.QueueHealth]{Items: queues})
}

// statsJSON counts jobs per state, overall and per cluster.
type statsJSON struct {
	Jobs     map[registry.JobState]int64            `json:"jobs"`
	Clusters map[string]map[registry.JobState]int64 `json:"clusters"`
	At       time.Time                              `json:"at"`
	// FeedSeq is the change feed's position when the counts were read: a
	// watch from ?since=FeedSeq misses no change made after them.
	FeedSeq int64 `json:"feedSeq"`
}

func (s *Server) adminStats(c *call) error {
	seq, err := s.reg.LatestSeq(c.ctx)
	if err != nil {
		return err
	}
	counts, err := s.reg.JobCounts(c.ctx)
	if err != nil {
		return err
	}
	out := statsJSON{FeedSeq: seq, Jobs: map[registry.JobState]int64{}, Clusters: map[string]map[registry.JobState]int64{}, At: s.reg.Now()}
	for _, st := range registry.JobStates {
		out.Jobs[st] = 0
	}
	for _, n := range counts {
		out.Jobs[n.State] += n.Count
		if out.Clusters[n.ClusterID] == nil {
			out.Clusters[n.ClusterID] = map[registry.JobState]int64{}
		}
		out.Clusters[n.ClusterID][n.State] += n.Count
	}
	return writeJSON(c.w, http.StatusOK, out)
}
