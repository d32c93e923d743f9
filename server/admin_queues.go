package server

import (
	"net/http"

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
