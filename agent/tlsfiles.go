package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The agent's TLS: tether's server certificate verified against --ca-file
// (or the system's roots), and a client certificate for mTLS: the files
// given with --client-cert and --client-key, or else the certificate
// tether's CA issued to this agent, kept in its state directory.
const (
	issuedCertFile = "client.crt"
	issuedKeyFile  = "client.key"
	caBundleFile   = "ca-bundle.pem" // the CAs tether's client certificates chain to
)

// TLSFiles configures the agent's TLS.
type TLSFiles struct {
	// CAFile is a PEM bundle that tether's server certificate must chain
	// to; empty: the system's roots.
	CAFile string
	// ClientCert and ClientKey are a client certificate and its key (PEM)
	// from a PKI of your own. Empty: the certificate tether issued, if any.
	ClientCert, ClientKey string
}

// explicit reports whether the client certificate comes from the operator
// (then the agent never asks tether for one).
func (f TLSFiles) explicit() bool { return f.ClientCert != "" }

func (f TLSFiles) check() error {
	if (f.ClientCert == "") != (f.ClientKey == "") {
		return errors.New("--client-cert and --client-key go together")
	}
	return nil
}

// certFiles is a client certificate read from two files and read again when
// either changes (checked at each handshake, which keep-alive makes rare):
// a certificate renewed on disk, by tether's rotation or by the operator's
// own tooling, is used without a restart. A pair that does not load (a
// renewal half written) is logged and the previous one kept. No files: no
// certificate.
type certFiles struct {
	cert, key string
	log       *slog.Logger

	mu    sync.Mutex
	pair  *tls.Certificate
	stamp string // of the pair loaded (or of the failure last logged)
}

func newCertFiles(cert, key string, log *slog.Logger) *certFiles {
	return &certFiles{cert: cert, key: key, log: log}
}

func (c *certFiles) fileStamp() string {
	s := ""
	for _, f := range []string{c.cert, c.key} {
		if fi, err := os.Stat(f); err == nil {
			s += fmt.Sprintf("%d@%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			s += "missing;"
		}
	}
	return s
}

// current returns the certificate to present (nil: none), loading the files
// again if they changed.
func (c *certFiles) current() *tls.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp := c.fileStamp()
	if stamp == c.stamp {
		return c.pair
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	switch {
	case err == nil:
		c.pair, c.stamp = &pair, stamp
		if pair.Leaf != nil {
			c.log.Info("client certificate loaded", "file", c.cert, "not_after", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	case errors.Is(err, fs.ErrNotExist) && c.pair == nil:
		c.stamp = stamp // no certificate yet: nothing to say
	default:
		c.stamp = "" // try again at the next handshake
		c.log.Error("client certificate not (re)loaded; using the previous one, if any", "file", c.cert, "err", err)
	}
	return c.pair
}

// getClientCertificate is tls.Config.GetClientCertificate. An empty
// certificate means none is sent.
func (c *certFiles) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if p := c.current(); p != nil {
		return p, nil
	}
	return &tls.Certificate{}, nil
}

// clientCertFiles is where the agent's client certificate is read from.
func clientCertFiles(stateDir string, f TLSFiles) (cert, key string) {
	if f.explicit() {
		return f.ClientCert, f.ClientKey
	}
	return filepath.Join(stateDir, issuedCertFile), filepath.Join(stateDir, issuedKeyFile)
}

// newHTTPClient is the agent's HTTP client: tether's server verified against
// f.CAFile, certs presented as the client certificate. Timeouts as
// apiclient's default client.
func newHTTPClient(f TLSFiles, certs *certFiles) (*http.Client, *certTransport, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		b, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("--ca-file %s holds no PEM certificate", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	if certs != nil {
		cfg.GetClientCertificate = certs.getClientCertificate
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     cfg,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	ct := &certTransport{}
	ct.cur.Store(tr)
	return &http.Client{Transport: ct}, ct, nil
}

// certTransport is the agent's transport. When its certificate is renewed,
// renew starts a new pool of connections, so that no request after the
// renewal goes over a connection that presented the old certificate.
// Closing the idle connections is not enough: one busy at the renewal (a
// held poll) goes back to the pool when done, and a busy agent would keep
// presenting the old certificate on it past the old credential's rotation
// grace, when tether refuses that certificate (401).
type certTransport struct {
	mu  sync.Mutex // serializes renew
	cur atomic.Pointer[http.Transport]
}

func (t *certTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.cur.Load().RoundTrip(r)
}

// CloseIdleConnections closes the current pool's idle connections.
func (t *certTransport) CloseIdleConnections() { t.cur.Load().CloseIdleConnections() }

// renew makes the next requests connect anew, presenting the certificate
// then on disk. The old pool's connections still busy finish their request
// and are closed once idle (IdleConnTimeout).
func (t *certTransport) renew() {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.cur.Load()
	t.cur.Store(old.Clone())
	old.CloseIdleConnections()
}

// pendingKey is a key made for a CSR, kept until tether answers the
// certificate for it.
type pendingKey struct {
	mu  sync.Mutex
	key *ecdsa.PrivateKey
}

// newCSR makes a P-256 key and a certificate request for it. tether decides
// the names, so the request asks for none.
func newCSR() (*ecdsa.PrivateKey, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, "", err
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), nil
}

// request is apiclient.Config.CertificateRequest: a new key for each
// rotation, so a renewed certificate never reuses a key.
func (p *pendingKey) request() (string, error) {
	key, csr, err := newCSR()
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.key = key
	p.mu.Unlock()
	return csr, nil
}

func (p *pendingKey) take() *ecdsa.PrivateKey {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.key
	p.key = nil
	return k
}

// saveIssued writes a certificate tether issued, its key and the CA bundle
// into the state directory (mode 0600): the key first, then the
// certificate, each atomically; a handshake in between finds a pair that
// does not match, keeps the previous one, and loads the new pair at the
// next.
func saveIssued(stateDir string, key *ecdsa.PrivateKey, certPEM, bundle string) error {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("tether's clientCertificate is not a PEM certificate")
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(stateDir, issuedKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(stateDir, issuedCertFile), []byte(certPEM), 0o600); err != nil {
		return err
	}
	if bundle != "" {
		return writeFileAtomic(filepath.Join(stateDir, caBundleFile), []byte(bundle), 0o600)
	}
	return nil
}

// hasIssuedCert reports whether tether issued this agent a certificate.
func hasIssuedCert(stateDir string) bool {
	_, err := os.Stat(filepath.Join(stateDir, issuedCertFile))
	return err == nil
}
