// Command goh2client sends APNs pushes over HTTP/2 as Go's own transport does (golang.org/x/net/http2, the transport
// of sideshow/apns2 and gorush), for the mock's tests: a real non-curl client with Go's framing and flow control.
//
// It sends -n pushes with -size-byte bodies from -concurrency goroutines over one connection at a time. A push that
// got an answer (any status) is done. A push refused before it was processed (a stream above the last-stream-id of
// a GOAWAY, RST_STREAM REFUSED_STREAM, a connection no longer usable) is sent again on a new connection. Any other
// failure is a lost answer. It prints one JSON object: per push its apns-id, final status, attempts and refusals,
// plus the totals. The bearer token comes from the environment (KKPUSH_GO_CLIENT_AUTHORIZATION), never argv.
//
// `goh2client load …` is the Go side of .ci/bench-senders instead: a load generator (see loadMain below).
//
// Built offline in GOPATH mode against Debian's golang-golang-x-net-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o goh2client main.go
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// loadRoots reads the PEM CA certificate at path, or exits (66: unreadable, 65: no certificate in it).
func loadRoots(path string) *x509.CertPool {
	caPEM, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goh2client:", err)
		os.Exit(66)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		fmt.Fprintln(os.Stderr, "goh2client: no certificate in", path)
		os.Exit(65)
	}
	return roots
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "load" {
		loadMain(os.Args[2:])
		return
	}
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
	roots := loadRoots(*caPath)
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

type loadReport struct {
	Requests     int     `json:"requests"`
	OK           int64   `json:"ok"`
	Failed       int64   `json:"failed"`
	FirstFailure string  `json:"first_failure,omitempty"`
	Dials        int64   `json:"dials"`
	Seconds      float64 `json:"seconds"`
	Rate         float64 `json:"rate"`
}

// loadMain is `goh2client load`, the Go side of .ci/bench-senders: it sends the same push -n times the way
// sideshow/apns2 does (an http.Client on golang.org/x/net/http2's Transport, one goroutine per push in
// flight, the answer's body read and closed) and prints one JSON object with the rate. With -strict (the
// default) the transport waits for a stream slot on its connection instead of dialing another, so the run
// keeps one connection as the benchmark's other clients do; -strict=false is apns2's own setting. The bearer
// token comes from the environment (KKPUSH_GO_LOAD_AUTHORIZATION), never argv. Any answer but 200, and any
// transport error, is a failure (the first is printed). Exit 0 when every push got a 200, 1 otherwise, 64 on
// usage errors.
func loadMain(args []string) {
	flags := flag.NewFlagSet("goh2client load", flag.ExitOnError)
	url := flags.String("url", "", "the push URL, https://127.0.0.1:PORT/3/device/TOKEN")
	caPath := flags.String("ca", "", "PEM CA certificate the server's certificate is signed by")
	payloadPath := flags.String("payload", "", "the payload file, sent as every push's body")
	topic := flags.String("topic", "", "apns-topic")
	count := flags.Int("n", 10000, "pushes to send (1 to 100000000)")
	concurrency := flags.Int("c", 100, "goroutines sending, so pushes in flight (1 to 10000)")
	strict := flags.Bool("strict", true, "wait for a stream slot on the one connection rather than dial another")
	timeout := flags.Duration("timeout", 600*time.Second, "the whole run's time limit")
	flags.Parse(args)
	authorization := os.Getenv("KKPUSH_GO_LOAD_AUTHORIZATION")
	if *url == "" || *caPath == "" || *payloadPath == "" || *topic == "" || authorization == "" ||
		*count < 1 || *count > 100000000 || *concurrency < 1 || *concurrency > 10000 {
		fmt.Fprintln(os.Stderr, "goh2client load: -url, -ca, -payload, -topic, -n (1 to 100000000), "+
			"-c (1 to 10000) and KKPUSH_GO_LOAD_AUTHORIZATION are needed")
		os.Exit(64)
	}
	roots := loadRoots(*caPath)
	body, err := os.ReadFile(*payloadPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goh2client load:", err)
		os.Exit(64)
	}

	var dials atomic.Int64
	transport := &http2.Transport{
		TLSClientConfig:            &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}},
		StrictMaxConcurrentStreams: *strict,
		DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			dials.Add(1)
			d := &tls.Dialer{Config: cfg}
			return d.DialContext(ctx, network, addr)
		},
	}
	client := &http.Client{Transport: transport, Timeout: *timeout}

	var ok, failed atomic.Int64
	var firstFailure sync.Once
	var first string
	fail := func(why string) {
		failed.Add(1)
		firstFailure.Do(func() { first = why })
	}
	deadline := time.Now().Add(*timeout)
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*count) {
				if time.Now().After(deadline) {
					fail("the run's time limit passed")
					continue
				}
				req, err := http.NewRequest("POST", *url, bytes.NewReader(body))
				if err != nil {
					fail(err.Error())
					continue
				}
				req.Header.Set("authorization", "bearer "+authorization)
				req.Header.Set("apns-topic", *topic)
				req.Header.Set("apns-push-type", "alert")
				req.Header.Set("apns-priority", "10")
				req.Header.Set("content-type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					fail(err.Error())
					continue
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				switch {
				case err != nil:
					fail("reading the answer: " + err.Error())
				case res.StatusCode != 200:
					fail(fmt.Sprintf("status %d", res.StatusCode))
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	r := loadReport{Requests: *count, OK: ok.Load(), Failed: failed.Load(), FirstFailure: first, Dials: dials.Load(),
		Seconds: elapsed, Rate: float64(*count) / elapsed}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "goh2client load:", err)
		os.Exit(1)
	}
	if r.OK != int64(*count) {
		os.Exit(1)
	}
}
