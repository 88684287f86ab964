// Command goh2client sends APNs pushes over HTTP/2 as Go's own transport does (golang.org/x/net/http2, the transport
// of sideshow/apns2 and gorush), for the mock's tests: a real non-curl client with Go's framing and flow control.
//
// It sends -n pushes with -size-byte bodies from -concurrency goroutines over one connection at a time. A push that
// got an answer (any status) is done. A push refused before it was processed (a stream above the last-stream-id of
// a GOAWAY, RST_STREAM REFUSED_STREAM, a connection no longer usable) is sent again on a new connection. Any other
// failure is a lost answer. It prints one JSON object: per push its apns-id, final status, attempts and refusals,
// plus the totals. The bearer token comes from the environment (KKPUSH_GO_CLIENT_AUTHORIZATION), never argv.
//
// Built offline in GOPATH mode against Debian's golang-golang-x-net-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o goh2client main.go
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

type push struct {
	ID        string   `json:"apns_id"`
	Token     string   `json:"token"`
	Status    int      `json:"status"`
	Attempts  int      `json:"attempts"`
	Refusals  []string `json:"refusals,omitempty"`
	LostError string   `json:"lost_error,omitempty"`
}

type report struct {
	Pushes    []push `json:"pushes"`
	Answered  int    `json:"answered"`
	OK        int    `json:"ok"`
	Lost      int    `json:"lost"`
	Refused   int    `json:"refused"`
	Dials     int    `json:"dials"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

// pool hands out the current connection, dialing a new one when it can take no more requests (after a GOAWAY).
type pool struct {
	mu        sync.Mutex
	cc        *http2.ClientConn
	dials     int
	addr      string
	tlsConfig *tls.Config
	transport *http2.Transport
}

func (p *pool) get() (*http2.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cc != nil && p.cc.CanTakeNewRequest() {
		return p.cc, nil
	}
	conn, err := tls.Dial("tcp", p.addr, p.tlsConfig)
	if err != nil {
		return nil, err
	}
	if proto := conn.ConnectionState().NegotiatedProtocol; proto != "h2" {
		conn.Close()
		return nil, fmt.Errorf("ALPN negotiated %q, not h2", proto)
	}
	cc, err := p.transport.NewClientConn(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p.cc = cc
	p.dials++
	return cc, nil
}

// refusal names why a failed attempt was certainly not processed by the server ("" if it may have been).
func refusal(err error) string {
	var se http2.StreamError
	if errors.As(err, &se) && se.Code == http2.ErrCodeRefusedStream {
		return "REFUSED_STREAM"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "graceful shutdown GOAWAY"):
		return "above GOAWAY last-stream-id"
	case strings.Contains(msg, "client conn not usable"):
		return "connection not usable"
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func uuid() string {
	h := strings.ToUpper(randomHex(16))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func main() {
	addr := flag.String("addr", "", "host:port of the mock's environment")
	caPath := flag.String("ca", "", "PEM CA certificate the mock's certificate is signed by")
	serverName := flag.String("server-name", "localhost", "TLS server name")
	topic := flag.String("topic", "", "apns-topic")
	count := flag.Int("n", 1000, "pushes to send")
	concurrency := flag.Int("concurrency", 100, "goroutines sending")
	size := flag.Int("size", 4000, "body size in bytes")
	maxAttempts := flag.Int("max-attempts", 10, "attempts per push before it counts as lost")
	timeout := flag.Duration("timeout", 120*time.Second, "the whole run's time limit")
	flag.Parse()
	authorization := os.Getenv("KKPUSH_GO_CLIENT_AUTHORIZATION")
	if *addr == "" || *caPath == "" || *topic == "" || authorization == "" || *count < 1 || *concurrency < 1 {
		fmt.Fprintln(os.Stderr, "goh2client: -addr, -ca, -topic, -n >= 1, -concurrency >= 1 and KKPUSH_GO_CLIENT_AUTHORIZATION are needed")
		os.Exit(64)
	}
	caPEM, err := os.ReadFile(*caPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goh2client:", err)
		os.Exit(66)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		fmt.Fprintln(os.Stderr, "goh2client: no certificate in", *caPath)
		os.Exit(65)
	}
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: *serverName, NextProtos: []string{"h2"}}
	p := &pool{
		addr: *addr, tlsConfig: tlsConfig,
		// Strict: wait for a stream slot on this connection rather than dial another (one connection at a time).
		transport: &http2.Transport{TLSClientConfig: tlsConfig, StrictMaxConcurrentStreams: true},
	}

	pushes := make([]push, *count)
	for i := range pushes {
		pushes[i] = push{ID: uuid(), Token: randomHex(32)}
	}
	start := time.Now()
	deadline := start.Add(*timeout)
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				send(p, &pushes[i], i, *topic, authorization, *size, *maxAttempts, deadline)
			}
		}()
	}
	for i := range pushes {
		work <- i
	}
	close(work)
	wg.Wait()

	r := report{Pushes: pushes, Dials: p.dials, ElapsedMS: time.Since(start).Milliseconds()}
	for _, q := range pushes {
		r.Refused += len(q.Refusals)
		switch {
		case q.Status == 200:
			r.OK++
			r.Answered++
		case q.Status > 0:
			r.Answered++
		default:
			r.Lost++
		}
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "goh2client:", err)
		os.Exit(74)
	}
}

// send delivers one push: one answer, or refusals retried on a new connection, or a lost answer.
func send(p *pool, q *push, i int, topic, authorization string, size, maxAttempts int, deadline time.Time) {
	head := fmt.Sprintf(`{"aps":{"alert":"push %d"},"pad":"`, i)
	pad := size - len(head) - 2
	if pad < 0 {
		pad = 0
	}
	body := []byte(head + strings.Repeat("x", pad) + `"}`)
	for q.Attempts < maxAttempts && time.Now().Before(deadline) {
		q.Attempts++
		cc, err := p.get()
		if err != nil {
			q.LostError = "dial: " + err.Error()
			return
		}
		req, err := http.NewRequest("POST", "https://"+p.addr+"/3/device/"+q.Token, bytes.NewReader(body))
		if err != nil {
			q.LostError = err.Error()
			return
		}
		req.Header.Set("authorization", "bearer "+authorization)
		req.Header.Set("apns-topic", topic)
		req.Header.Set("apns-push-type", "alert")
		req.Header.Set("apns-id", q.ID)
		res, err := cc.RoundTrip(req)
		if err != nil {
			if why := refusal(err); why != "" {
				q.Refusals = append(q.Refusals, why)
				continue
			}
			q.LostError = err.Error()
			return
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			q.LostError = "reading the answer: " + err.Error()
			return
		}
		q.Status = res.StatusCode
		q.LostError = ""
		return
	}
	if q.LostError == "" {
		q.LostError = fmt.Sprintf("still refused after %d attempts", q.Attempts)
	}
}
