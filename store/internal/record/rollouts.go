package record

// RolloutCols are a rollout's columns.
const RolloutCols = `id, name, organization, selector, kind, payload, max_parallel, max_failures, pause_between_ms,
	order_by, state, failure_base, next_wave_at, version, created_by, created_at, updated_at, finished_at`

// TargetCols are a rollout target's columns (t) with its job's (j) as it is
// now: the job may be gone (retention, or its cluster deleted), hence the
// outer join.
const TargetCols = `t.position, t.cluster_id, t.cluster_name, t.state, t.reason, t.job_id, t.attempts, t.started_at, t.finished_at,
	j.state, j.attempt, j.error`
