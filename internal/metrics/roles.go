package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
)

// actionLabel is the label value of an action name: "main" or "error".
func actionLabel(a contracts.ActionName) string {
	if a == contracts.ErrorAction {
		return "error"
	}
	return "main"
}

// outcomes are the label values of an attempt's outcome.
var outcomes = []string{string(contracts.Succeeded), string(contracts.Failed)}

// Planner is the planner's metrics: dispatch, the results feedback loop
// and the API. It implements dispatch.Observer and feedback.Observer.
type Planner struct {
	lateness   *prometheus.HistogramVec
	dispatched *prometheus.CounterVec
	results    *prometheus.CounterVec
	followUps  *prometheus.CounterVec
	faulted    prometheus.Counter
	skipped    *prometheus.CounterVec
	ended      *prometheus.CounterVec
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

// Planner returns the planner's metrics, registering them the first time.
func (r *Registry) Planner() *Planner {
	r.plannerOnce.Do(func() {
		p := &Planner{
			lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: namespace, Name: "dispatch_lateness_seconds",
				Help:    "How late executions were stored on JetStream for the workers: the time JetStream acknowledged them minus their due time, 0 for those stored ahead of it.",
				Buckets: latencyBuckets,
			}, []string{"action"}),
			dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "executions_dispatched_total",
				Help: "Executions stored on the EXEC stream, by action (main or error) and attempt (first or retry).",
			}, []string{"action", "attempt"}),
			results: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "results_counted_total",
				Help: "Results the planners counted, each once, by action (main or error) and outcome.",
			}, []string{"action", "outcome"}),
			followUps: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "follow_ups_scheduled_total",
				Help: "Attempts scheduled after a failed one: kind retry (the same action again) or error_action.",
			}, []string{"kind"}),
			faulted: prometheus.NewCounter(prometheus.CounterOpts{
				Namespace: namespace, Name: "occurrences_faulted_total",
				Help: "Occurrences whose every attempt of the main action failed.",
			}),
			skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "occurrences_skipped_total",
				Help: "Occurrences that came due and did not run, by reason (overlap: an earlier one was in flight; catch-up: missed by the planners and skipped by the job's catch-up policy).",
			}, []string{"reason"}),
			ended: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "jobs_ended_total",
				Help: "Jobs that ended after their last occurrence, by final state (Completed or Faulted).",
			}, []string{"state"}),
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "api_requests_total",
				Help: "REST API requests, by route, method and status code.",
			}, []string{"route", "method", "code"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: namespace, Name: "api_request_duration_seconds",
				Help:    "How long the REST API took to answer, by route and method.",
				Buckets: latencyBuckets,
			}, []string{"route", "method"}),
		}
		r.reg.MustRegister(p.lateness, p.dispatched, p.results, p.followUps, p.faulted, p.skipped, p.ended, p.requests, p.duration)
		// Every series of a known label value starts at zero, so that rates
		// and alerts have a series before the first event.
		for _, action := range []string{"main", "error"} {
			p.lateness.WithLabelValues(action)
			for _, attempt := range []string{"first", "retry"} {
				p.dispatched.WithLabelValues(action, attempt)
			}
			for _, outcome := range outcomes {
				p.results.WithLabelValues(action, outcome)
			}
		}
		for _, kind := range []string{"retry", "error_action"} {
			p.followUps.WithLabelValues(kind)
		}
		for _, reason := range events.SkipReasons {
			p.skipped.WithLabelValues(reason)
		}
		for _, state := range []contracts.JobState{contracts.JobStateCompleted, contracts.JobStateFaulted} {
			p.ended.WithLabelValues(string(state))
		}
		r.planner = p
	})
	return r.planner
}

// Dispatched observes an execution JetStream stored.
func (p *Planner) Dispatched(d events.Dispatched) {
	action := actionLabel(d.Action)
	p.lateness.WithLabelValues(action).Observe(max(d.Stored.Sub(d.Due), 0).Seconds())
	attempt := "first"
	if d.Attempt > 0 {
		attempt = "retry"
	}
	p.dispatched.WithLabelValues(action, attempt).Inc()
}

// Recorded observes a result counted for the first time and what follows
// it.
func (p *Planner) Recorded(rec events.Recorded) {
	r, d := rec.Result, rec.Decision
	p.results.WithLabelValues(actionLabel(r.ActionName), string(r.Outcome)).Inc()
	if d.Faulted {
		p.faulted.Inc()
	}
	switch d.Next {
	case contracts.RetrySameAction:
		p.followUps.WithLabelValues("retry").Inc()
	case contracts.RunErrorAction:
		p.followUps.WithLabelValues("error_action").Inc()
	}
}

// Skipped observes an occurrence that did not run.
func (p *Planner) Skipped(s events.Skipped) {
	p.skipped.WithLabelValues(s.Reason).Inc()
}

// Ended observes a job that ended.
func (p *Planner) Ended(state contracts.JobState) {
	p.ended.WithLabelValues(string(state)).Inc()
}

// Request observes one API request: route is its pattern, never its path.
func (p *Planner) Request(route, method string, code int, took time.Duration) {
	p.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	p.duration.WithLabelValues(route, method).Observe(took.Seconds())
}

// Worker is the workers' metrics. It implements worker.Observer.
type Worker struct {
	executions *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	running    prometheus.Gauge
	held       prometheus.Gauge
	keptBack   prometheus.Gauge
	handedBack prometheus.Counter
	skipped    *prometheus.CounterVec
}

// Worker returns the workers' metrics, registering them the first time.
func (r *Registry) Worker() *Worker {
	r.workerOnce.Do(func() {
		w := &Worker{
			executions: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "executions_total",
				Help: "Attempts performed, by action type, action (main or error) and outcome (Succeeded or Failed).",
			}, []string{"action_type", "action", "outcome"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: namespace, Name: "action_duration_seconds",
				Help:    "How long performing an action took, by action type and outcome.",
				Buckets: latencyBuckets,
			}, []string{"action_type", "outcome"}),
			running: prometheus.NewGauge(prometheus.GaugeOpts{
				Namespace: namespace, Name: "executions_in_flight",
				Help: "Executions the workers of this process are performing now.",
			}),
			held: prometheus.NewGauge(prometheus.GaugeOpts{
				Namespace: namespace, Name: "executions_held",
				Help: "Executions the workers of this process received ahead of their due time and hold until it comes.",
			}),
			keptBack: prometheus.NewGauge(prometheus.GaugeOpts{
				Namespace: namespace, Name: "results_kept_back",
				Help: "Results of actions performed by the workers of this process that wait, at most a second, for executions due now (on any worker) to be sent.",
			}),
			handedBack: prometheus.NewCounter(prometheus.CounterOpts{
				Namespace: namespace, Name: "executions_handed_back_total",
				Help: "Executions handed back to JetStream unperformed or without a stored result (a stopping worker, a result not stored); they are delivered again.",
			}),
			skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: namespace, Name: "executions_skipped_total",
				Help: "Deliveries left alone, neither performed nor handed back, by reason: stale (their ack wait may have run out, so another worker may have them) or duplicate (a second delivery of an attempt in flight in the same worker).",
			}, []string{"reason"}),
		}
		r.reg.MustRegister(w.executions, w.duration, w.running, w.held, w.keptBack, w.handedBack, w.skipped)
		for _, reason := range []string{"stale", "duplicate"} {
			w.skipped.WithLabelValues(reason)
		}
		for _, t := range contracts.ActionTypes {
			for _, outcome := range outcomes {
				w.executions.WithLabelValues(string(t), "main", outcome)
				w.executions.WithLabelValues(string(t), "error", outcome)
				w.duration.WithLabelValues(string(t), outcome)
			}
		}
		r.worker = w
	})
	return r.worker
}

// Held observes a worker starting (1) or ending (-1) to hold an execution
// until it is due.
func (w *Worker) Held(delta int) { w.held.Add(float64(delta)) }

// KeptBack observes a result starting (1) or ending (-1) to wait for the
// executions due now to be sent.
func (w *Worker) KeptBack(delta int) { w.keptBack.Add(float64(delta)) }

// Started observes a worker starting on an execution.
func (w *Worker) Started() { w.running.Inc() }

// Finished observes a worker done with an execution.
func (w *Worker) Finished(r *contracts.Result) {
	w.running.Dec()
	if r == nil {
		w.handedBack.Inc()
		return
	}
	actionType := string(r.ActionType)
	if actionType == "" {
		actionType = "unknown" // the action could not be read
	}
	w.executions.WithLabelValues(actionType, actionLabel(r.ActionName), string(r.Outcome)).Inc()
	w.duration.WithLabelValues(actionType, string(r.Outcome)).Observe(max(r.EndTime.Sub(r.StartTime), 0).Seconds())
}

// Skipped observes a delivery a worker left alone; reason is "stale" or
// "duplicate".
func (w *Worker) Skipped(reason string) { w.skipped.WithLabelValues(reason).Inc() }

// History is the history consumer's metrics.
type History struct {
	stored *prometheus.CounterVec
}

// History returns the history consumer's metrics, registering them the
// first time.
func (r *Registry) History() *History {
	r.historyOnce.Do(func() {
		h := &History{stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "history_entries_stored_total",
			Help: "History entries stored, by status (Completed or Failed).",
		}, []string{"status"})}
		r.reg.MustRegister(h.stored)
		for _, status := range []contracts.ExecutionStatus{contracts.StatusCompleted, contracts.StatusFailed} {
			h.stored.WithLabelValues(string(status))
		}
		r.history = h
	})
	return r.history
}

// Stored observes a history entry stored.
func (h *History) Stored(e contracts.HistoryEntry) {
	h.stored.WithLabelValues(string(e.Status)).Inc()
}

// API wraps the REST API's handler so that each request is counted under
// its route pattern (route returns it).
func (p *Planner) API(h http.Handler, route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		p.Request(route(r), r.Method, rec.status, time.Since(start))
	})
}

// statusRecorder notes the status code a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
