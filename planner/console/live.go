package console

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
)

// liveHeartbeat is how often a quiet event stream sends a comment, so that
// proxies keep it open and a dead viewer is noticed.
const liveHeartbeat = 20 * time.Second

// events streams a job's results to its page as they are published on the
// RESULTS stream's subject (server-sent events), each as the history row
// the page shows. The viewer must be allowed to read the job.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	sess, ok := c.sessions.read(r)
	if !ok || c.cfg.API.RequiresToken() && sess.Token == "" {
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	if c.cfg.NATS == nil {
		http.Error(w, "live results are not served here", http.StatusNotFound)
		return
	}
	q := c.newRequest(w, r, sess)
	ref := jobRefOf(r)
	if err := q.api.get(q.ctx(), jobPath(ref), nil, nil); err != nil {
		status := http.StatusInternalServerError
		if f, ok := err.(*apiFault); ok {
			status = f.Status
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	msgs := make(chan *nats.Msg, 64)
	sub, err := c.cfg.NATS.ChanSubscribe(contracts.ResultSubjectPrefix+ref.Tokens(), msgs)
	if err != nil {
		c.cfg.Logger.Warn("console: following results", slog.String("error", err.Error()))
		http.Error(w, "live results are not available now", http.StatusServiceUnavailable)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the stream outlives the listener's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n: following results\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	beat := time.NewTicker(liveHeartbeat)
	defer beat.Stop()
	for {
		var out string
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-beat.C:
			out = ": still here\n\n"
		case m := <-msgs:
			res, err := contracts.ParseResultEvent(m.Data)
			if err != nil {
				continue
			}
			row, err := c.historyRow(res.HistoryEntry().Properties())
			if err != nil {
				c.cfg.Logger.Error("console: rendering a result", slog.String("error", err.Error()))
				continue
			}
			out = "event: result\ndata: " + strings.ReplaceAll(row, "\n", "\ndata: ") + "\n\n"
		}
		if _, err := fmt.Fprint(w, out); err != nil || rc.Flush() != nil {
			return
		}
	}
}

// historyRow renders one history entry as the job page's table row.
func (c *Console) historyRow(e contracts.JobHistoryDefinitionProperties) (string, error) {
	var buf bytes.Buffer
	if err := c.pages["job"].ExecuteTemplate(&buf, "historyRow", e); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}
