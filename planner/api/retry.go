package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
	"github.com/jobscheduler/scheduler/planner/store"
)

// A request retries what meets a transient fault (NATS reconnecting, a
// stream leader being elected, Redis loading its data) for a while before
// it answers 503: its retry window, Config.RetryWindow, starts when the
// request arrives and is carried in its context.

// How long one attempt may take: a point read or write, and a listing, a
// job's create (which counts the collection's jobs) or a collection's
// deletion. An attempt cut short is retried while the window lasts; none
// runs past the window by more than pointAttempt, so a request answers
// within its window and a second.
const (
	pointAttempt = time.Second
	bulkAttempt  = 5 * time.Second
)

// The pause between attempts doubles from firstBackoff to maxBackoff.
const (
	firstBackoff = 25 * time.Millisecond
	maxBackoff   = 400 * time.Millisecond
)

// retryWindow is what a request's context carries of its retries.
type retryWindow struct {
	end    time.Time
	logger *slog.Logger
	// retried, when a test sets it, receives each fault a request retries.
	retried chan<- error
}

type retryWindowKey struct{}

func withRetryWindow(ctx context.Context, w *retryWindow) context.Context {
	return context.WithValue(ctx, retryWindowKey{}, w)
}

// retry runs op until it succeeds, fails for a reason that does not pass,
// or the request's retry window ends, and returns its last result; a
// context without a window tries once. Each attempt may take up to
// attempt. faulted tells that an attempt failed transiently: a write may
// then have taken effect although its answer was lost. retryable decides
// which transient faults are worth another attempt (transient.Is, or
// transient.Refused for an operation that must not be done twice).
func retry[T any](ctx context.Context, attempt time.Duration, retryable func(error) bool,
	op func(context.Context) (T, error)) (v T, faulted bool, err error) {
	w, _ := ctx.Value(retryWindowKey{}).(*retryWindow)
	backoff := firstBackoff
	for {
		timeout := attempt
		if w != nil {
			// No attempt runs past the window by more than a point read's
			// time, so that a request answers within about the window.
			timeout = min(attempt, max(time.Until(w.end), 0)+pointAttempt)
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		v, err = op(actx)
		cancel()
		if err == nil || !transient.Is(err) {
			return v, faulted, err
		}
		faulted = true
		if w == nil || ctx.Err() != nil || !retryable(err) || time.Now().Add(backoff).After(w.end) {
			return v, faulted, err
		}
		w.logger.Debug("retrying after a transient fault", slog.String("error", err.Error()), slog.Duration("backoff", backoff))
		if w.retried != nil {
			select {
			case w.retried <- err:
			default:
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, faulted, err
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// storeAPI is what the API calls of the job store (*store.Store).
type storeAPI interface {
	GetJob(ctx context.Context, ref contracts.JobRef) (store.Job, error)
	GetCollection(ctx context.Context, ref contracts.CollectionRef) (store.Collection, error)
	CollectionForCreate(ctx context.Context, ref contracts.CollectionRef) (store.Collection, error)
	ListJobs(ctx context.Context, ref contracts.CollectionRef) ([]store.Job, error)
	ListSealedJobs(ctx context.Context, ref contracts.CollectionRef) ([]store.Job, error)
	CountJobs(ctx context.Context, ref contracts.CollectionRef) (int, error)
	ListCollections(ctx context.Context, subscription, resourceGroup string) ([]store.Collection, error)
	CreateJobIn(ctx context.Context, j store.Job, a store.Admission) (store.Job, error)
	UpdateJob(ctx context.Context, j store.Job, expected uint64) (store.Job, error)
	DeleteJob(ctx context.Context, ref contracts.JobRef) error
	PutCollection(ctx context.Context, c store.Collection, expected uint64) (store.Collection, error)
	DeleteCollection(ctx context.Context, ref contracts.CollectionRef) error
	GetCalendar(ctx context.Context, ref contracts.CollectionRef, name string) (store.Calendar, error)
	PutCalendar(ctx context.Context, c store.Calendar, expected uint64) (store.Calendar, error)
	DeleteCalendar(ctx context.Context, ref contracts.CollectionRef, name string) error
	Calendars(ctx context.Context, ref contracts.CollectionRef) ([]store.Calendar, error)
}

// jobStore is the store as the API calls it: every call is retried after a
// transient fault within the request's retry window, and a write whose
// lost answer hid that it took effect is recognized when its retry finds
// it done (a create that finds the very job it wrote, a delete that finds
// nothing left).
type jobStore struct {
	st storeAPI
}

func point[T any](ctx context.Context, op func(context.Context) (T, error)) (T, bool, error) {
	return retry(ctx, pointAttempt, transient.Is, op)
}

func bulk[T any](ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	v, _, err := retry(ctx, bulkAttempt, transient.Is, op)
	return v, err
}

func (s jobStore) GetJob(ctx context.Context, ref contracts.JobRef) (store.Job, error) {
	j, _, err := point(ctx, func(ctx context.Context) (store.Job, error) { return s.st.GetJob(ctx, ref) })
	return j, err
}

func (s jobStore) GetCollection(ctx context.Context, ref contracts.CollectionRef) (store.Collection, error) {
	c, _, err := point(ctx, func(ctx context.Context) (store.Collection, error) { return s.st.GetCollection(ctx, ref) })
	return c, err
}

func (s jobStore) CollectionForCreate(ctx context.Context, ref contracts.CollectionRef) (store.Collection, error) {
	c, _, err := point(ctx, func(ctx context.Context) (store.Collection, error) { return s.st.CollectionForCreate(ctx, ref) })
	return c, err
}

func (s jobStore) ListJobs(ctx context.Context, ref contracts.CollectionRef) ([]store.Job, error) {
	return bulk(ctx, func(ctx context.Context) ([]store.Job, error) { return s.st.ListJobs(ctx, ref) })
}

func (s jobStore) ListSealedJobs(ctx context.Context, ref contracts.CollectionRef) ([]store.Job, error) {
	return bulk(ctx, func(ctx context.Context) ([]store.Job, error) { return s.st.ListSealedJobs(ctx, ref) })
}

func (s jobStore) CountJobs(ctx context.Context, ref contracts.CollectionRef) (int, error) {
	return bulk(ctx, func(ctx context.Context) (int, error) { return s.st.CountJobs(ctx, ref) })
}

func (s jobStore) ListCollections(ctx context.Context, subscription, resourceGroup string) ([]store.Collection, error) {
	return bulk(ctx, func(ctx context.Context) ([]store.Collection, error) {
		return s.st.ListCollections(ctx, subscription, resourceGroup)
	})
}

// CreateJob creates j. When an attempt failed transiently and a later one
// finds a job of that name, the job found is the one an earlier attempt
// wrote if it is j exactly (the same names, times and properties): it is
// then returned as created, once its collection is found still there and
// within a.MaxJobs, which the lost attempt may not have confirmed.
func (s jobStore) CreateJobIn(ctx context.Context, j store.Job, a store.Admission) (store.Job, error) {
	saved, faulted, err := retry(ctx, bulkAttempt, transient.Is, func(ctx context.Context) (store.Job, error) { return s.st.CreateJobIn(ctx, j, a) })
	if !faulted || !errors.Is(err, store.ErrExists) {
		return saved, err
	}
	found, gerr := s.GetJob(ctx, j.Ref)
	if gerr != nil || !sameJob(found, j) {
		return saved, err
	}
	if _, err := s.GetCollection(ctx, j.Ref.CollectionRef()); err != nil {
		return store.Job{}, s.undoRecovered(ctx, found, err)
	}
	if a.MaxJobs > 0 {
		n, err := s.CountJobs(ctx, j.Ref.CollectionRef())
		if err == nil && n > a.MaxJobs {
			err = fmt.Errorf("creating job %s: the collection holds %d jobs, over its limit of %d: %w", j.Ref.KVKey(), n, a.MaxJobs, store.ErrQuotaExceeded)
		}
		if err != nil {
			return store.Job{}, s.undoRecovered(ctx, found, err)
		}
	}
	return found, nil
}

// undoRecovered deletes a job a lost attempt created, when it cannot be
// kept, and returns why.
func (s jobStore) undoRecovered(ctx context.Context, j store.Job, cause error) error {
	if err := s.DeleteJob(ctx, j.Ref); err != nil && !errors.Is(err, store.ErrNotFound) {
		return errors.Join(cause, fmt.Errorf("deleting job %s again: %w", j.Ref.KVKey(), err))
	}
	return cause
}

// UpdateJob replaces the job at revision expected. When an attempt failed
// transiently and a later one finds the job changed, the change is the
// lost attempt's own if the job now is j exactly.
func (s jobStore) UpdateJob(ctx context.Context, j store.Job, expected uint64) (store.Job, error) {
	saved, faulted, err := point(ctx, func(ctx context.Context) (store.Job, error) { return s.st.UpdateJob(ctx, j, expected) })
	if faulted && errors.Is(err, store.ErrConflict) {
		if found, gerr := s.GetJob(ctx, j.Ref); gerr == nil && found.Revision > expected && sameJob(found, j) {
			return found, nil
		}
	}
	return saved, err
}

// DeleteJob deletes the job; one that is gone after an attempt failed
// transiently was deleted by that attempt (or by another request: either
// way it is gone, as asked).
func (s jobStore) DeleteJob(ctx context.Context, ref contracts.JobRef) error {
	_, faulted, err := point(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.st.DeleteJob(ctx, ref) })
	if faulted && errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// PutCollection creates (expected 0) or replaces the collection, and
// recognizes the write of a lost attempt as CreateJob and UpdateJob do.
func (s jobStore) PutCollection(ctx context.Context, c store.Collection, expected uint64) (store.Collection, error) {
	saved, faulted, err := point(ctx, func(ctx context.Context) (store.Collection, error) { return s.st.PutCollection(ctx, c, expected) })
	if faulted && (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict)) {
		if found, gerr := s.GetCollection(ctx, c.Ref); gerr == nil && found.Revision > expected && sameCollection(found, c) {
			return found, nil
		}
	}
	return saved, err
}

// DeleteCollection deletes the collection and its jobs, as DeleteJob does.
func (s jobStore) DeleteCollection(ctx context.Context, ref contracts.CollectionRef) error {
	_, faulted, err := retry(ctx, bulkAttempt, transient.Is, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.st.DeleteCollection(ctx, ref)
	})
	if faulted && errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func (s jobStore) GetCalendar(ctx context.Context, ref contracts.CollectionRef, name string) (store.Calendar, error) {
	c, _, err := point(ctx, func(ctx context.Context) (store.Calendar, error) { return s.st.GetCalendar(ctx, ref, name) })
	return c, err
}

func (s jobStore) Calendars(ctx context.Context, ref contracts.CollectionRef) ([]store.Calendar, error) {
	return bulk(ctx, func(ctx context.Context) ([]store.Calendar, error) { return s.st.Calendars(ctx, ref) })
}

// PutCalendar creates (expected 0) or replaces the calendar, and
// recognizes the write of a lost attempt as PutCollection does.
func (s jobStore) PutCalendar(ctx context.Context, c store.Calendar, expected uint64) (store.Calendar, error) {
	saved, faulted, err := point(ctx, func(ctx context.Context) (store.Calendar, error) { return s.st.PutCalendar(ctx, c, expected) })
	if faulted && (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict)) {
		found, gerr := s.GetCalendar(ctx, c.Collection, c.Name)
		if gerr == nil && found.Revision > expected && found.Name == c.Name && found.Created.Equal(c.Created) && sameJSON(found.Properties, c.Properties) {
			return found, nil
		}
	}
	return saved, err
}

// DeleteCalendar deletes the calendar, as DeleteJob does.
func (s jobStore) DeleteCalendar(ctx context.Context, ref contracts.CollectionRef, name string) error {
	_, faulted, err := point(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.st.DeleteCalendar(ctx, ref, name) })
	if faulted && errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// sameJob reports whether the stored job found is the job written: the
// same names, creation and anchor times and properties (Updated is the
// store's own stamp).
func sameJob(found, written store.Job) bool {
	return found.Ref == written.Ref && found.Created.Equal(written.Created) && found.Anchored.Equal(written.Anchored) &&
		sameJSON(found.Properties, written.Properties)
}

// sameCollection reports whether the stored collection found is the one
// written; its Created time, stamped to the nanosecond by the request that
// created it, tells it from one another request created.
func sameCollection(found, written store.Collection) bool {
	return found.Ref == written.Ref && found.Created.Equal(written.Created) && found.Location == written.Location &&
		maps.Equal(found.Tags, written.Tags) && sameJSON(found.Properties, written.Properties)
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
