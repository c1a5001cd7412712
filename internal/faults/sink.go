package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers the HTTP action sends that the sink reads.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerExecutionTag   = "x-ms-scheduler-execution-tag"
	headerJobID          = "x-ms-scheduler-jobid"
	headerExpected       = "x-ms-scheduler-expected-execution-time"
	expectedLayout       = "2006-01-02T15:04:05"
)

// Call is one request the sink received.
type Call struct {
	// Path is the request's path; its first segment says how the sink
	// answers (see Behaviour).
	Path string
	// Job is the x-ms-scheduler-jobid header.
	Job string
	// Key is the Idempotency-Key header: the attempt's occurrence id.
	Key string
	// Tag is the x-ms-scheduler-execution-tag header, the same as Key.
	Tag string
	// Expected is the x-ms-scheduler-expected-execution-time header (whole
	// seconds, UTC); zero when it is missing or does not parse.
	Expected time.Time
	// At is when the request arrived; Answered when the answer was written
	// (zero while the call is in flight).
	At, Answered time.Time
	// Status is the answer's status code.
	Status int
	// Worker names the worker process that made the call, "" when it
	// could not be told.
	Worker string
}

// Behaviour is how the sink answers a path: /ok/… at once with 200;
// /slow/… with 200 after Hold; /flaky/N/… with 500 to the first N attempts
// of an occurrence (told apart by their idempotency key; a repeated
// delivery of an attempt gets the same answer as the first) and 200 to the
// next; /fail/… always 500; /err/… (error actions) 200.
type Behaviour struct {
	// Hold is how long /slow/ calls wait before their answer, so that
	// actions are in flight when a worker is killed or paused.
	Hold time.Duration
}

// Sink is the HTTP target of every job: it records each call (path, keys,
// expected time, arrival, answer, and which worker made it) and answers as
// its path asks.
type Sink struct {
	behaviour Behaviour
	owner     func(remoteAddr string) string
	server    *http.Server
	listener  net.Listener

	mu       sync.Mutex
	calls    []Call
	keys     map[string]int // calls by key
	inFlight map[int]bool   // indexes into calls
	// attempts numbers the distinct keys of each occurrence of a flaky
	// path, in the order they arrived: occurrence → key → index.
	attempts map[string]map[string]int
}

// NewSink starts a sink on a free loopback port. owner, when not nil,
// names the worker process behind a caller's address. Close stops it.
func NewSink(b Behaviour, owner func(remoteAddr string) string) (*Sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{behaviour: b, owner: owner, listener: l, inFlight: map[int]bool{}, keys: map[string]int{}, attempts: map[string]map[string]int{}}
	s.server = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// URL returns the sink's base URL.
func (s *Sink) URL() string { return "http://" + s.listener.Addr().String() }

// Close stops the sink, cutting the calls in flight.
func (s *Sink) Close() { _ = s.server.Close() }

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	c := Call{
		Path: r.URL.Path, Job: r.Header.Get(headerJobID), At: time.Now(),
		Key: r.Header.Get(headerIdempotencyKey), Tag: r.Header.Get(headerExecutionTag),
	}
	if t, err := time.Parse(expectedLayout, r.Header.Get(headerExpected)); err == nil {
		c.Expected = t.UTC()
	}
	if s.owner != nil {
		c.Worker = s.owner(r.RemoteAddr)
	}
	status, hold := s.answer(c)
	c.Status = status
	s.mu.Lock()
	i := len(s.calls)
	s.calls = append(s.calls, c)
	s.keys[c.Key]++
	s.inFlight[i] = true
	s.mu.Unlock()
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
		}
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "%d for %s", status, c.Path)
	s.mu.Lock()
	s.calls[i].Answered = time.Now()
	delete(s.inFlight, i)
	s.mu.Unlock()
}

// answer decides the status of a call and how long to hold it.
func (s *Sink) answer(c Call) (status int, hold time.Duration) {
	kind, rest, _ := strings.Cut(strings.TrimPrefix(c.Path, "/"), "/")
	switch kind {
	case "ok", "err":
		return http.StatusOK, 0
	case "slow":
		return http.StatusOK, s.behaviour.Hold
	case "fail":
		return http.StatusInternalServerError, 0
	case "flaky":
		n, _, _ := strings.Cut(rest, "/")
		failures, err := strconv.Atoi(n)
		if err != nil {
			return http.StatusBadRequest, 0
		}
		if s.attemptIndex(c) < failures {
			return http.StatusInternalServerError, 0
		}
		return http.StatusOK, 0
	}
	return http.StatusNotFound, 0
}

// attemptIndex returns the 0-based rank of the call's key among the
// distinct keys its occurrence (path and expected time) has sent.
func (s *Sink) attemptIndex(c Call) int {
	occ := c.Path + "@" + c.Expected.Format(time.RFC3339)
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.attempts[occ]
	if keys == nil {
		keys = map[string]int{}
		s.attempts[occ] = keys
	}
	i, ok := keys[c.Key]
	if !ok {
		i = len(keys)
		keys[c.Key] = i
	}
	return i
}

// Calls returns every call so far, in the order they arrived.
func (s *Sink) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// InFlight returns the calls not answered yet.
func (s *Sink) InFlight() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for i := range s.inFlight {
		out = append(out, s.calls[i])
	}
	return out
}

// WaitInFlight waits until a call held by a known worker is in flight
// and returns it, or returns false when ctx ends first. The call has been
// held a tenth of Hold at least: its worker waits for the answer, and the
// calls it sent at the same instant have left it. A worker paused at the
// instant it sends them may have checked one's ack wait before the pause
// and send it after, whatever it does (the check and the send cannot be
// one step; the idempotency key covers that); the suite pauses it
// mid-action, not mid-send.
func (s *Sink) WaitInFlight(ctx context.Context) (Call, bool) {
	for {
		for _, c := range s.InFlight() {
			if age := time.Since(c.At); c.Worker != "" && age >= s.behaviour.Hold/10 && age < s.behaviour.Hold/2 {
				return c, true
			}
		}
		select {
		case <-ctx.Done():
			return Call{}, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// seen reports whether a call with key arrived.
func (s *Sink) seen(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key] > 0
}

// keysOf returns how many distinct keys the calls for job carried.
func (s *Sink) keysOf(job string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := map[string]bool{}
	for _, c := range s.calls {
		if c.Job == job {
			keys[c.Key] = true
		}
	}
	return len(keys)
}
