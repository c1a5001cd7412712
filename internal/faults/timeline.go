package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// probe returns the status of GET url, 0 when there is no answer within
// a second, and the start of the body.
func probe(ctx context.Context, url string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
	return res.StatusCode, strings.TrimSpace(string(data))
}

// Transition is a part becoming ready or not.
type Transition struct {
	At     time.Time
	Who    string
	Ready  bool
	Detail string
}

// Timeline records the transitions of what it watches.
type Timeline struct {
	mu     sync.Mutex
	events []Transition
	state  map[string]bool
}

// NewTimeline returns an empty timeline.
func NewTimeline() *Timeline { return &Timeline{state: map[string]bool{}} }

// Watch polls each URL (name → URL) every 250 ms until ctx ends, and
// records each change between 200 and anything else.
func (tl *Timeline) Watch(ctx context.Context, urls map[string]string) {
	for {
		var wg sync.WaitGroup
		for who, url := range urls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body := probe(ctx, url)
				tl.record(who, code == http.StatusOK, fmt.Sprintf("%d %s", code, body))
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (tl *Timeline) record(who string, ready bool, detail string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if was, seen := tl.state[who]; seen && was == ready {
		return
	}
	tl.state[who] = ready
	tl.events = append(tl.events, Transition{At: time.Now(), Who: who, Ready: ready, Detail: detail})
}

// Events returns the transitions so far.
func (tl *Timeline) Events() []Transition {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]Transition(nil), tl.events...)
}
