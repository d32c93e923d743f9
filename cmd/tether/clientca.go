package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/registry"
)

// clientCARefresh is how often serve looks at the client CA file and at
// tether's own CA in the store: a CA created (tether ca init) or replaced
// while serve runs, or a renewed --tls-client-ca file, is trusted within this
// long, or at once on SIGHUP.
const clientCARefresh = 10 * time.Second

// clientCAs is the set of CAs client certificates are verified against:
// --tls-client-ca's file (if given) plus tether's CA (if one exists). Each
// handshake takes the current set through tls.Config.GetConfigForClient, so
// that the set changes without a restart. With no CA at all, no client
// certificate is asked for.
type clientCAs struct {
	file string
	reg  *registry.Registry
	base *tls.Config
	log  *slog.Logger

	mu       sync.Mutex
	fileStmp string
	filePEM  []byte
	storePEM []byte
	cfg      atomic.Pointer[tls.Config]
}

// newClientCAs reads the file and the store once: a file that does not load
// at startup stops serve (the store's CA, if it cannot be read, is tried
// again at the next refresh).
func newClientCAs(ctx context.Context, file string, reg *registry.Registry, base *tls.Config, log *slog.Logger) (*clientCAs, error) {
	c := &clientCAs{file: file, reg: reg, base: base, log: log}
	if file != "" {
		pem, err := readClientCAFile(file)
		if err != nil {
			return nil, err
		}
		c.filePEM, c.fileStmp = pem, stampOf(file)
	}
	if pem, err := reg.CABundle(ctx); err == nil {
		c.storePEM = pem
	} else {
		log.Warn("cannot read tether's CA; trying again shortly", "err", registry.ErrorMessage(err))
	}
	c.rebuild()
	return c, nil
}

func readClientCAFile(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "cannot read the client CA file: %v", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, registry.Errorf(registry.CodeInvalid, "client CA file %s holds no PEM certificate", file)
	}
	return b, nil
}

func stampOf(file string) string {
	fi, err := os.Stat(file)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
}

// rebuild makes the handshake configuration for the current CAs; the caller
// holds mu, or c is not shared yet.
func (c *clientCAs) rebuild() {
	cfg := c.base.Clone()
	cfg.GetConfigForClient = nil
	pool := x509.NewCertPool()
	n := 0
	for _, pem := range [][]byte{c.filePEM, c.storePEM} {
		if len(pem) > 0 && pool.AppendCertsFromPEM(pem) {
			n++
		}
	}
	if n > 0 {
		// Agents without a certificate still connect and sign with HMAC
		// (or are bearer-only); a certificate, when given, must verify.
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	c.cfg.Store(cfg)
}

// enabled reports whether client certificates are verified now.
func (c *clientCAs) enabled() bool { return c.cfg.Load().ClientCAs != nil }

// refresh reads the file (if it changed) and the store's CA bundle, and
// swaps the handshake configuration when either changed. A file that no
// longer loads is logged and the previous CAs kept.
func (c *clientCAs) refresh(ctx context.Context, why string) {
	var storePEM []byte
	storeErr := error(nil)
	storePEM, storeErr = c.reg.CABundle(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	if c.file != "" {
		if st := stampOf(c.file); st != c.fileStmp || why == "SIGHUP" {
			pem, err := readClientCAFile(c.file)
			if err != nil {
				c.log.Error("client CA file not reloaded; still trusting the previous one", "trigger", why, "err", registry.ErrorMessage(err))
			} else {
				c.fileStmp = st
				if !bytes.Equal(pem, c.filePEM) {
					c.filePEM, changed = pem, true
				}
			}
		}
	}
	if storeErr != nil {
		c.log.Warn("cannot read tether's CA; keeping the CAs trusted so far", "err", registry.ErrorMessage(storeErr))
	} else if !bytes.Equal(storePEM, c.storePEM) {
		c.storePEM, changed = storePEM, true
	}
	if changed {
		c.rebuild()
		c.log.Info("client CAs reloaded", "trigger", why, "file", c.file != "", "tether_ca", len(c.storePEM) > 0)
	}
}

// getConfigForClient is tls.Config.GetConfigForClient.
func (c *clientCAs) getConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	return c.cfg.Load(), nil
}

// run refreshes every interval (0: clientCARefresh) until ctx ends.
func (c *clientCAs) run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = clientCARefresh
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.refresh(ctx, "timer")
		}
	}
}
