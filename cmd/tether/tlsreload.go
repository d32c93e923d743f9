package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloader serves the certificate of --tls-cert/--tls-key and picks up a
// new one without a restart: when either file changes (checked at most once
// per interval, on a handshake) or when reload is called (on SIGHUP). A
// certificate that fails to load is logged and the previous one kept, so
// that a half-written renewal never takes the server down.
type certReloader struct {
	certFile, keyFile string
	interval          time.Duration
	now               func() time.Time
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string // the files' sizes and modification times when loaded
	checkedAt time.Time
}

// newCertReloader loads the pair once: an error here (a missing or bad file
// at startup) stops the server.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, interval: 5 * time.Second, now: time.Now, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) fileStamp() string {
	s := ""
	for _, f := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			s += fmt.Sprintf("%d@%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			s += "missing;"
		}
	}
	return s
}

// load reads the pair; the caller holds mu, or r is not shared yet.
func (r *certReloader) load() error {
	stamp := r.fileStamp()
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("cannot load the TLS certificate %s and key %s: %v", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamp = &cert, stamp
	return nil
}

// reload loads the pair now (SIGHUP), keeping the old one on failure.
func (r *certReloader) reload(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkedAt = r.now()
	if err := r.load(); err != nil {
		r.log.Error("TLS certificate not reloaded; still serving the previous one", "trigger", why, "err", err)
		return
	}
	r.log.Info("TLS certificate reloaded", "trigger", why, "cert", r.certFile)
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	now := r.now()
	due := now.Sub(r.checkedAt) >= r.interval
	changed := false
	if due {
		r.checkedAt = now
		changed = r.fileStamp() != r.stamp
	}
	cert := r.cert
	r.mu.Unlock()
	if changed {
		r.reload("files changed")
		r.mu.Lock()
		cert = r.cert
		r.mu.Unlock()
	}
	return cert, nil
}
