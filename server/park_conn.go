package server

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// parkedWriter is a parked poll's http.ResponseWriter: it keeps the answer
// until the poll ends, then writes it to the connection as HTTP/1.1.
type parkedWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *parkedWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *parkedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *parkedWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, b...)
	return len(b), nil
}

// answerWriteTimeout bounds writing a parked poll's answer: a client that
// does not read it loses its connection, not a goroutine for good.
const answerWriteTimeout = 10 * time.Second

// writeTo writes the answer, with Connection: close when closing.
func (w *parkedWriter) writeTo(conn net.Conn, closing bool) error {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	h := w.Header()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		h.Del(k)
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	body := w.body
	if status == http.StatusNoContent || status == http.StatusNotModified || status < 200 {
		body = nil
	} else {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if closing {
		h.Set("Connection", "close")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body)
	_ = conn.SetWriteDeadline(time.Now().Add(answerWriteTimeout))
	_, err := conn.Write(b.Bytes())
	_ = conn.SetWriteDeadline(time.Time{})
	return err
}

// handback is the listener through which parked polls give their
// connections back to the http.Server, once answered, so that it reads the
// next request on them: a second Serve of the same server, whose Accept
// only ever takes these, and at once.
type handback struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandback(addr net.Addr) *handback {
	return &handback{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (h *handback) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handback) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *handback) Addr() net.Addr { return h.addr }

// give hands c to the server, or reports false when it no longer serves.
func (h *handback) give(c net.Conn) bool {
	select {
	case <-h.done:
		return false
	default:
	}
	select {
	case h.conns <- c:
		return true
	case <-h.done:
		return false
	}
}
