package registry

import (
	"context"
	"net/netip"
	"time"
)

// Config tunes the registry. Zero values take the defaults named in each
// field's comment.
type Config struct {
	Clock Clock // SystemClock
	// Keyring seals HMAC keys. Without one, registering with the hmac
	// capability fails.
	Keyring           Keyring
	TokenTTL          time.Duration // DefaultTokenTTL
	CredentialTTL     time.Duration // DefaultCredentialTTL
	RotateAfter       time.Duration // DefaultRotateAfter
	RotationGrace     time.Duration // DefaultRotationGrace
	EventReplayWindow time.Duration // DefaultEventReplayWindow
	// VisibilityWindow is how long a job handed to one poll is hidden from
	// the other polls of its cluster, unless acked (DefaultVisibilityWindow;
	// negative: never hidden, every poll sees every queued job).
	VisibilityWindow time.Duration
	// WebhookAllow are internal ranges (loopback, link-local, private, ...)
	// webhooks may be sent to nonetheless: receivers on premises
	// (webhook_dest.go). ParseWebhookAllow reads them.
	WebhookAllow []netip.Prefix
	// IdempotencyRetention is how long a job's idempotency key answers it
	// from its creation, whatever the job's state (an open job holds its
	// key however long it stays open) (DefaultIdempotencyRetention;
	// negative: only while the job is open).
	IdempotencyRetention time.Duration
}

// DefaultVisibilityWindow is Config.VisibilityWindow's default, like a
// queue's visibility timeout: long enough for an agent to ack what it got.
const DefaultVisibilityWindow = 30 * time.Second

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.TokenTTL, DefaultTokenTTL)
	def(&c.CredentialTTL, DefaultCredentialTTL)
	def(&c.RotateAfter, DefaultRotateAfter)
	def(&c.RotationGrace, DefaultRotationGrace)
	def(&c.EventReplayWindow, DefaultEventReplayWindow)
	if c.VisibilityWindow == 0 {
		c.VisibilityWindow = DefaultVisibilityWindow
	}
	if c.IdempotencyRetention == 0 {
		c.IdempotencyRetention = DefaultIdempotencyRetention
	}
}

// Registry is the domain service: every rule of the protocol and of the admin
// surface, over a Store. It is safe for concurrent use. Server, CLI and console
// all go through it; none of them touches the Store.
type Registry struct {
	store Store
	cfg   Config
	hub   *hub
	feed  *feedReader
	cache *recordCache
	ready readiness
}

// New returns a registry over store. Close it to stop its background work; it
// does not close the store.
func New(store Store, cfg Config) *Registry {
	cfg.setDefaults()
	r := &Registry{store: store, cfg: cfg}
	r.hub = newHub(store)
	r.feed = newFeedReader(store)
	r.cache = newRecordCache(r.hub, cfg.Clock.Now)
	return r
}

// Close stops the change-feed follower, releasing every waiter and watcher.
func (r *Registry) Close() { r.hub.close() }

// Now is the registry's time, at the millisecond precision stores keep.
func (r *Registry) Now() time.Time { return r.cfg.Clock.Now().UTC().Truncate(time.Millisecond) }

// Ping checks the store is reachable and its schema current (Ready also
// checks it can write).
func (r *Registry) Ping(ctx context.Context) error { return r.store.Ping(ctx) }

// Config returns the registry's effective configuration.
func (r *Registry) Config() Config { return r.cfg }

func (r *Registry) auditEntry(ctx context.Context, action, clusterID, targetKind, targetID, reason string) AuditEntry {
	return AuditEntry{
		At:         r.Now(),
		Actor:      ActorFrom(ctx).String(),
		Action:     action,
		ClusterID:  clusterID,
		TargetKind: targetKind,
		TargetID:   targetID,
		Reason:     reason,
	}
}
