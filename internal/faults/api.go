package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// APIVersion is the api-version every request names.
const APIVersion = "2016-03-01"

// Answer is one answer of the API, or the lack of one.
type Answer struct {
	// Source is who asked: "suite" (the suite's own calls) or "reader"
	// (the background reader).
	Source string
	// Planner is the index of the planner asked.
	Planner int
	// Method and Route say what was asked (the route without names).
	Method, Route string
	// At is when the request was sent.
	At time.Time
	// Status is the answer's status code, 0 when there was none (the
	// connection failed or the request timed out).
	Status int
	// RetryAfter is the Retry-After header of the answer.
	RetryAfter string
	// Body is the start of the body of a 5xx answer, or the error when
	// there was no answer.
	Body string
}

// Answers records every answer of the API during a run.
type Answers struct {
	mu  sync.Mutex
	all []Answer
}

func (a *Answers) add(ans Answer) {
	a.mu.Lock()
	a.all = append(a.all, ans)
	a.mu.Unlock()
}

// All returns every answer so far.
func (a *Answers) All() []Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Answer(nil), a.all...)
}

// API is a client of the planners' REST API: it asks them in turn, and
// asks the other planner when one does not answer or answers 503, until
// its context ends. Every answer is recorded.
type API struct {
	// Bases are the planners' base URLs (http://127.0.0.1:port).
	Bases []string
	// Record receives every answer.
	Record *Answers
	// Source names the caller in the record.
	Source string
	// Timeout bounds one request. Defaults to 5 s.
	Timeout time.Duration
	// OneRound makes Do give up after asking each planner once, instead of
	// retrying until its context ends.
	OneRound bool

	next atomic.Uint64
}

// CollectionPath is the path of the suite's job collection.
const CollectionPath = "/subscriptions/faults/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"

// ErrNoAnswer is returned when no planner gave an answer that is not a
// 503 before the context ended (or, with OneRound, in one round).
var ErrNoAnswer = errors.New("no planner answered")

// Do sends method path (relative to a planner's base URL; the api-version
// is added) with body, and returns the status and body of the first answer
// that is not a 503. With OneRound, a 503 is returned when no planner gave
// a better answer, and ErrNoAnswer when none answered at all.
func (a *API) Do(ctx context.Context, method, path, body string) (int, []byte, error) {
	if len(a.Bases) == 0 {
		return 0, nil, fmt.Errorf("%w: no planner to ask", ErrNoAnswer)
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	path += sep + "api-version=" + APIVersion
	client := &http.Client{Timeout: timeout}
	var (
		last        = ErrNoAnswer
		unavailable []byte // the body of a 503, when one came
	)
	for round := 0; ; round++ {
		for range a.Bases {
			i := int(a.next.Add(1)-1) % len(a.Bases)
			status, data, err := a.once(ctx, client, i, method, path, body)
			switch {
			case err == nil && status != http.StatusServiceUnavailable:
				return status, data, nil
			case err == nil:
				last, unavailable = fmt.Errorf("%w: planner %d: 503 %s", ErrNoAnswer, i, data), data
			default:
				last = fmt.Errorf("%w: planner %d: %v", ErrNoAnswer, i, err)
			}
			if ctx.Err() != nil {
				return 0, nil, last
			}
		}
		if a.OneRound && unavailable != nil {
			return http.StatusServiceUnavailable, unavailable, nil
		}
		if a.OneRound {
			return 0, nil, last
		}
		select {
		case <-ctx.Done():
			return 0, nil, last
		case <-time.After(min(time.Duration(round+1)*200*time.Millisecond, 2*time.Second)):
		}
	}
}

// once asks planner i once and records the answer.
func (a *API) once(ctx context.Context, client *http.Client, i int, method, path, body string) (int, []byte, error) {
	ans := Answer{Source: a.Source, Planner: i, Method: method, Route: route(path), At: time.Now()}
	req, err := http.NewRequestWithContext(ctx, method, a.Bases[i]+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		ans.Body = err.Error()
		a.Record.add(ans)
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	ans.Status, ans.RetryAfter = res.StatusCode, res.Header.Get("Retry-After")
	if res.StatusCode >= 500 {
		ans.Body = string(data[:min(len(data), 300)])
	}
	a.Record.add(ans)
	return res.StatusCode, data, err
}

// route returns the path with the collection and job names replaced, to
// group answers by route.
func route(path string) string {
	p, _, _ := strings.Cut(path, "?")
	p = strings.TrimPrefix(p, CollectionPath)
	parts := strings.Split(p, "/")
	for i := range parts {
		if i > 0 && parts[i-1] == "jobs" {
			parts[i] = "{job}"
		}
	}
	return "{collection}" + strings.Join(parts, "/")
}

// APIFigures sums up the answers of a run.
type APIFigures struct {
	// Total is how many requests were sent.
	Total int
	// ByStatus counts the answers by status ("200", "503", "none").
	ByStatus map[string]int
	// ServerErrors are the 5xx answers other than 503.
	ServerErrors []Answer
	// Unavailable are the 503 answers.
	Unavailable []Answer
	// WithoutRetryAfter are the 503 answers without Retry-After.
	WithoutRetryAfter []Answer
}

// Figures sums up the recorded answers.
func (a *Answers) Figures() APIFigures {
	f := APIFigures{ByStatus: map[string]int{}}
	for _, ans := range a.All() {
		f.Total++
		key := "none"
		if ans.Status != 0 {
			key = fmt.Sprint(ans.Status)
		}
		f.ByStatus[key]++
		switch {
		case ans.Status == http.StatusServiceUnavailable:
			f.Unavailable = append(f.Unavailable, ans)
			if ans.RetryAfter == "" {
				f.WithoutRetryAfter = append(f.WithoutRetryAfter, ans)
			}
		case ans.Status >= 500:
			f.ServerErrors = append(f.ServerErrors, ans)
		}
	}
	return f
}

// String renders the counts by status, sorted.
func (f APIFigures) String() string {
	keys := make([]string, 0, len(f.ByStatus))
	for k := range f.ByStatus {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, f.ByStatus[k])
	}
	return strings.Join(parts, ", ")
}
