package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

// Scheduling is what the API needs of the planner's timer: what a job's
// status shows, running a job now, and the executions per minute.
type Scheduling interface {
	// Runtimes returns, for each job, when it runs next (zero when it is
	// not scheduled, or not yet) and its tally of executions.
	Runtimes(ctx context.Context, refs []contracts.JobRef) (next []time.Time, tallies []contracts.Tally, err error)
	// Scheduled returns the job's scheduled occurrence: when it is due and
	// how many occurrences of its schedule follow it (-1 for no limit);
	// false when none is scheduled.
	Scheduled(ctx context.Context, ref contracts.JobRef) (at time.Time, remaining int64, ok bool, err error)
	// RunNow schedules one execution of the job's action now, outside its
	// schedule.
	RunNow(ctx context.Context, job store.Job) error
	// Backfill schedules a run of the job for each instant of its
	// schedule in [start, end], in order, at a bounded rate, outside its
	// schedule. See BackfillPlan and the errors it may return:
	// ErrBackfillPending, ErrBackfillNotRecurring, *BackfillTooLargeError.
	Backfill(ctx context.Context, job store.Job, start, end time.Time) (BackfillPlan, error)
	// Pending returns, for each job, the runs the timer holds for it (its
	// scheduled occurrence, and the retries, error actions and runs
	// pending beside it) and its tally, in a few round trips whatever the
	// number of jobs.
	Pending(ctx context.Context, refs []contracts.JobRef) ([][]TimerEntry, []contracts.Tally, error)
	// ExecutionCounts returns the attempts of the collections' jobs, of
	// their main and error actions alike, that ended in each minute from
	// the one holding from up to the one before to, by outcome, for the
	// minutes that have any, earliest first.
	ExecutionCounts(ctx context.Context, cols []contracts.CollectionRef, from, to time.Time) ([]MinuteExecutions, error)
}

// History is what the API needs of the job history.
type History interface {
	// List returns the job's history entries, newest first.
	List(ctx context.Context, ref contracts.JobRef) ([]contracts.HistoryEntry, error)
}

// Config configures the API.
type Config struct {
	// History serves the jobs' history. Nil answers every history request
	// with an empty list.
	History History
	// Tokens are flat bearer tokens accepted in the Authorization header,
	// each an operator over everything (OperatorTokens). Empty, with no
	// Authenticators, means no authentication, which the binary allows
	// only when the API listens on loopback. Defaults to none.
	Tokens []string
	// Authenticators find the principal of the other bearer tokens, tried
	// in order after Tokens: a TokenFile, an OIDC verifier. Defaults to
	// none.
	Authenticators []Authenticator
	// Ceilings bound the quotas and collections a principal below
	// operator may give itself. Defaults to Ceilings' defaults.
	Ceilings Ceilings
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// RetryWindow is how long a request retries the job store, the timer
	// and the history after a transient fault (NATS or Redis down or
	// reconnecting, a leader being elected) before it answers 503 with
	// Retry-After. Defaults to 3 s.
	RetryWindow time.Duration
	// Logger receives one line per failed request. Defaults to slog.Default().
	Logger *slog.Logger
	// Hosts are the host names the API is served as: a request whose Host
	// header names another is refused (421), so that a name an attacker
	// points at the API's address (DNS rebinding) reaches nothing. Empty,
	// with no PublicURL, serves every Host. Defaults to none.
	Hosts []string
	// PublicURL is the URL clients reach the API at (scheme and host):
	// the base of every nextLink, and a host the API is served as.
	// Defaults to the address the API listens on (see Listening).
	PublicURL *url.URL
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.RetryWindow = cmp.Or(c.RetryWindow, 3*time.Second)
	c.Ceilings = c.Ceilings.withDefaults()
	c.Authenticators = withFlatTokens(c.Tokens, c.Authenticators)
	return c
}

// Server serves the REST API.
type Server struct {
	store jobStore
	sched Scheduling
	cfg   Config
	guard *browserGuard
	// base is the URL nextLink starts with: cfg.PublicURL, or the address
	// the API listens on.
	base atomic.Pointer[url.URL]
	// retried, when a test sets it, receives each transient fault a request
	// retries.
	retried chan<- error
}

// New returns the API over st, asking sched for timing.
func New(st *store.Store, sched Scheduling, cfg Config) *Server {
	s := &Server{store: jobStore{st: st}, sched: sched, cfg: cfg.withDefaults(), guard: newBrowserGuard(cfg.Hosts, cfg.PublicURL)}
	s.base.Store(cfg.PublicURL)
	return s
}

// Listening tells the server the address it listens on (host:port), and
// whether it serves TLS there: the base of nextLink when no PublicURL is
// configured.
func (s *Server) Listening(addr string, tls bool) {
	if s.cfg.PublicURL != nil {
		return
	}
	u := &url.URL{Scheme: "http", Host: addr}
	if tls {
		u.Scheme = "https"
	}
	s.base.Store(u)
}

// supportedAPIVersions are accepted in api-version; absent is accepted too.
var supportedAPIVersions = map[string]bool{"2016-03-01": true, "2016-01-01": true, "2014-08-01-preview": true}

// maxBodyBytes bounds a request body; a job itself is limited to 16 KB by
// validation, which names the limit.
const maxBodyBytes = 1 << 20

// ServeHTTP adds the request id, checks the token and api-version, routes
// the request, and turns a panic into a 500 with an ARM body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID()
	w.Header().Set("x-ms-request-id", id)
	w.Header().Set("x-ms-correlation-request-id", cmp.Or(r.Header.Get("x-ms-correlation-request-id"), id))
	if cid := r.Header.Get("x-ms-client-request-id"); cid != "" {
		w.Header().Set("x-ms-client-request-id", cid)
	}
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("panic serving request", slog.String("method", r.Method), slog.String("path", contracts.Abbreviate(r.URL.Path)),
				slog.String("request_id", id), slog.Any("panic", p))
			writeError(w, newError(http.StatusInternalServerError, codeInternal, "internal error; quote request id "+id))
		}
	}()
	// A request that already carries a principal comes from inside the
	// process (Apply), not from a browser.
	if _, internal := principalOf(r.Context()); !internal {
		if e := s.guard.check(r); e != nil {
			writeError(w, e)
			return
		}
	}
	r, authErr := s.authenticate(r)
	if authErr != nil {
		if authErr.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
		}
		writeError(w, authErr)
		return
	}
	if v := r.URL.Query().Get("api-version"); v != "" && !supportedAPIVersions[v] {
		writeError(w, newError(http.StatusBadRequest, codeInvalidAPIVersion,
			fmt.Sprintf("api-version %q is not supported; use 2016-03-01", v)))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	r = r.WithContext(withRetryWindow(r.Context(), &retryWindow{
		end: time.Now().Add(s.cfg.RetryWindow), logger: s.cfg.Logger.With(slog.String("request_id", id)), retried: s.retried,
	}))
	if e := s.route(w, r); e != nil {
		attrs := []any{slog.String("method", r.Method), slog.String("path", contracts.Abbreviate(r.URL.Path)),
			slog.String("request_id", id), slog.String("error", e.body.Message)}
		if e.cause != nil {
			attrs = append(attrs, slog.String("cause", e.cause.Error()))
		}
		if e.status >= 500 && e.status != http.StatusServiceUnavailable {
			e.body.Message += "; quote request id " + id
		}
		switch {
		case e.status == http.StatusServiceUnavailable:
			s.cfg.Logger.Warn("request answered 503 after retrying", attrs...)
		case e.status >= 500:
			s.cfg.Logger.Error("request failed", attrs...)
		}
		writeError(w, e)
	}
}

// Authenticated serves h only to requests with a token the API accepts
// (any token, when the API asks for one): /metrics beside the API.
func (s *Server) Authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, e := s.authenticate(r); e != nil {
			if e.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
			}
			writeError(w, e)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// route serves the ARM route the path names (see match); names are
// path-unescaped.
func (s *Server) route(w http.ResponseWriter, r *http.Request) *apiError {
	seg, err := segments(r.URL)
	if err != nil {
		return newError(http.StatusBadRequest, codeBadRequest, err.Error())
	}
	pattern := match(seg)
	if pattern == routeOther {
		return newError(http.StatusNotFound, codeNotFound, fmt.Sprintf("no resource at %s", contracts.QuoteName(r.URL.Path)))
	}
	// Before anything reaches NATS or Redis: a name over its limit would
	// make a subject NATS refuses, closing the connection.
	if e := checkPathNames(pattern, seg); e != nil {
		return e
	}
	if e := s.authorize(r, pattern, seg); e != nil {
		return e
	}
	if pattern == routeAllCollections {
		return s.only(r, http.MethodGet, func() *apiError { return s.listCollections(w, r, "", "") })
	}
	switch pattern {
	case routeSubscriptionUpcoming, routeUpcoming, routeCollectionUpcoming, routeJobUpcoming:
		job := ""
		if pattern == routeJobUpcoming {
			job = seg[9]
		}
		return s.only(r, http.MethodGet, func() *apiError { return s.listUpcoming(w, r, pathScope(pattern, seg), job) })
	case routeSubscriptionExecutions, routeExecutions, routeCollectionExecutions:
		return s.only(r, http.MethodGet, func() *apiError { return s.countExecutions(w, r, pathScope(pattern, seg)) })
	}
	sub := seg[1]
	if pattern == routeSubscriptionCollections {
		return s.only(r, http.MethodGet, func() *apiError { return s.listCollections(w, r, sub, "") })
	}
	rg := seg[3]
	if pattern == routeCollections {
		return s.only(r, http.MethodGet, func() *apiError { return s.listCollections(w, r, sub, rg) })
	}
	coll := contracts.CollectionRef{Subscription: sub, ResourceGroup: rg, Collection: seg[7]}
	switch pattern {
	case routeCollection:
		return resource(w, r, coll, s.getCollection, s.putCollection, s.patchCollection, s.deleteCollection)
	case routeCollectionEnable, routeCollectionDisable:
		return s.only(r, http.MethodPost, func() *apiError { return s.setCollectionEnabled(w, r, coll, pattern == routeCollectionEnable) })
	case routeJobs:
		return s.only(r, http.MethodGet, func() *apiError { return s.listJobs(w, r, coll) })
	case routeCalendars:
		return s.only(r, http.MethodGet, func() *apiError { return s.listCalendars(w, r, coll) })
	case routeCalendar:
		return resource(w, r, calendarRef{coll, seg[9]}, s.getCalendar, s.putCalendar, s.patchCalendar, s.deleteCalendar)
	}
	job := coll.Job(seg[9])
	switch pattern {
	case routeJob:
		return resource(w, r, job, s.getJob, s.putJob, s.patchJob, s.deleteJob)
	case routeJobRun:
		return s.only(r, http.MethodPost, func() *apiError { return s.runJob(w, r, job) })
	case routeJobBackfill:
		return s.only(r, http.MethodPost, func() *apiError { return s.backfillJob(w, r, job) })
	case routeJobPreview:
		switch r.Method {
		case http.MethodGet:
			return s.previewJob(w, r, job)
		case http.MethodPost:
			return s.previewDraft(w, r, job)
		}
		return methodNotAllowed(r, "GET, POST")
	case routeJobHistory:
		return s.only(r, http.MethodGet, func() *apiError { return s.listHistory(w, r, job) })
	}
	return newError(http.StatusNotFound, codeNotFound, fmt.Sprintf("no resource at %s", contracts.QuoteName(r.URL.Path)))
}

// handler serves one method on the resource named by ref.
type handler[R any] func(http.ResponseWriter, *http.Request, R) *apiError

// resource dispatches the methods of a collection, job or calendar
// resource.
func resource[R any](w http.ResponseWriter, r *http.Request, ref R, get, put, patch, del handler[R]) *apiError {
	switch r.Method {
	case http.MethodGet:
		return get(w, r, ref)
	case http.MethodPut:
		return put(w, r, ref)
	case http.MethodPatch:
		return patch(w, r, ref)
	case http.MethodDelete:
		return del(w, r, ref)
	}
	return methodNotAllowed(r, "GET, PUT, PATCH, DELETE")
}

func (s *Server) only(r *http.Request, method string, handle func() *apiError) *apiError {
	if r.Method != method {
		return methodNotAllowed(r, method)
	}
	return handle()
}

func methodNotAllowed(r *http.Request, allowed string) *apiError {
	return newError(http.StatusMethodNotAllowed, codeMethodNotAllowed,
		fmt.Sprintf("%s is not allowed here; use %s", r.Method, allowed))
}

// segments splits the escaped path into unescaped segments.
func segments(u *url.URL) ([]string, error) {
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil {
			return nil, fmt.Errorf("the path segment %s is not valid: %v", contracts.QuoteName(p), err)
		}
		parts[i] = v
	}
	return parts, nil
}

// newRequestID returns a random UUID (version 4).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Apply serves one request from inside the process (the NATS intake) as if
// it had come over HTTP, without the bearer token check, as the principal
// "nats-intake" (a writer over everything), and returns the status and
// body the API would have sent.
func (s *Server) Apply(ctx context.Context, method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequestWithContext(withPrincipal(ctx, intakePrincipal), method, path, bytes.NewReader(body))
	if err != nil {
		e := newError(http.StatusBadRequest, codeBadRequest, err.Error())
		data, _ := json.Marshal(armError{Error: e.body})
		return e.status, data
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// recorder is the http.ResponseWriter of Apply.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
