package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// replaceCert writes a new self-signed pair over certFile and keyFile, with a
// modification time of at, and returns the new certificate's DER.
func replaceCert(t *testing.T, certFile, keyFile string, at time.Time) []byte {
	t.Helper()
	newCert, newKey, _ := writeServerCert(t, t.TempDir())
	for src, dst := range map[string]string{newCert: certFile, newKey: keyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return certDER(t, certFile)
}

func certDER(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	return block.Bytes
}

func TestCertReloaderPicksUpChangedFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeServerCert(t, dir)
	first := certDER(t, certFile)
	var logs syncBuffer
	r, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	serving := func() []byte {
		c, err := r.getCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificate[0]
	}
	if !bytes.Equal(serving(), first) {
		t.Fatal("not serving the certificate it loaded")
	}
	second := replaceCert(t, certFile, keyFile, now.Add(time.Minute))
	if !bytes.Equal(serving(), first) {
		t.Error("checked the files again before the interval passed")
	}
	now = now.Add(r.interval)
	if !bytes.Equal(serving(), second) {
		t.Fatal("a changed certificate was not picked up after the interval")
	}
	// A half-written renewal keeps the previous certificate.
	if err := os.WriteFile(certFile, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(r.interval)
	if !bytes.Equal(serving(), second) {
		t.Error("a broken certificate file replaced the working one")
	}
	if !strings.Contains(logs.String(), "still serving the previous one") {
		t.Errorf("the failed reload was not logged:\n%s", logs.String())
	}
}

// SIGHUP makes tether serve reload its certificate at once.
func TestServeReloadsCertificateOnSIGHUP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, _ := writeServerCert(t, dir)
	p, addr, _ := startServe(t, newDB(t), "--tls-cert", certFile, "--tls-key", keyFile)
	handshake := func() []byte {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	if !bytes.Equal(handshake(), certDER(t, certFile)) {
		t.Fatal("not serving --tls-cert")
	}
	// The same modification time as before: only the signal can tell.
	fi, err := os.Stat(certFile)
	if err != nil {
		t.Fatal(err)
	}
	second := replaceCert(t, certFile, keyFile, fi.ModTime())
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "TLS certificate reloaded")
	if got := handshake(); !bytes.Equal(got, second) {
		c, _ := x509.ParseCertificate(got)
		t.Errorf("after SIGHUP still serving %v", c.Subject)
	}
	if code, log := p.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, log)
	}
}
