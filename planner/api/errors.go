package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
	"github.com/jobscheduler/scheduler/planner/store"
)

// Error codes of the ARM error bodies this API returns.
const (
	codeBadRequest        = "BadRequest"
	codeInvalidAPIVersion = "InvalidApiVersionParameter"
	codeInvalidName       = "InvalidResourceName"
	codeInvalidFilter     = "InvalidFilter"
	codeInvalidQuery      = "InvalidQueryParameterValue"
	codeNotFound          = "ResourceNotFound"
	codeQuotaExceeded     = "QuotaExceeded"
	codeConflict          = "Conflict"
	codeAuthFailed        = "AuthenticationFailed"
	codeMethodNotAllowed  = "MethodNotAllowed"
	codeTooLarge          = "RequestEntityTooLarge"
	codeInternal          = "InternalError"
	codeUnavailable       = "ServiceUnavailable"
)

// The error code of a request its principal may not make (access.go).
const (
	codeAuthorizationFailed = "AuthorizationFailed"
)

// armError is the body of every error response:
// {"error": {"code", "message", "details": [{"code", "target", "message"}]}}.
type armError struct {
	Error armErrorBody `json:"error"`
}

type armErrorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Target  string         `json:"target,omitempty"`
	Details []armErrorBody `json:"details,omitempty"`
}

// apiError is an error with its HTTP status and ARM body.
type apiError struct {
	status int
	body   armErrorBody
	// retryAfter, when set, is sent in the Retry-After header.
	retryAfter time.Duration
	// cause is the fault behind a 5xx, for the log only: its text may
	// name internals (servers, keys, files) a client is not shown.
	cause error
}

// because records err as the cause of e, logged and never sent.
func (e *apiError) because(err error) *apiError {
	e.cause = err
	return e
}

func (e *apiError) Error() string { return e.body.Message }

func newError(status int, code, message string) *apiError {
	return &apiError{status: status, body: armErrorBody{Code: code, Message: message}}
}

// invalid turns validation errors into a 400 whose message holds every
// violation and whose details name each field.
func invalid(errs contracts.FieldErrors) *apiError {
	lines := make([]string, len(errs))
	details := make([]armErrorBody, len(errs))
	for i, fe := range errs {
		lines[i] = fe.Error()
		details[i] = armErrorBody{Code: codeBadRequest, Target: fe.Path, Message: fe.Message}
	}
	e := newError(http.StatusBadRequest, codeBadRequest, "The definition is invalid: "+strings.Join(lines, "; "))
	e.body.Details = details
	return e
}

// retryAfter is the Retry-After of a 503: the request already retried
// for its retry window, and a NATS leader election takes a few seconds.
const retryAfter = 2 * time.Second

// unavailable is a 503 ServiceUnavailable with Retry-After, which the
// Azure SDKs retry.
func unavailable(message string) *apiError {
	e := newError(http.StatusServiceUnavailable, codeUnavailable, message)
	e.retryAfter = retryAfter
	return e
}

// storeError maps an error of the job store, the timer or the history to
// an API error; what names the resource. A transient fault that outlasted
// the request's retries is a 503; an error that is no known condition is a
// fault of the scheduler, a 500.
func storeError(err error, what string) *apiError {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return newError(http.StatusNotFound, codeNotFound, what+" was not found")
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrExists):
		return newError(http.StatusConflict, codeConflict, what+" was changed by another request at the same time; retry")
	case errors.Is(err, store.ErrQuotaExceeded):
		return newError(http.StatusConflict, codeQuotaExceeded, what+" cannot be created: the job collection holds its maximum number of jobs (quota.maxJobCount)")
	case errors.Is(err, store.ErrInvalidName):
		return newError(http.StatusBadRequest, codeInvalidName, err.Error())
	case errors.Is(err, context.Canceled):
		return unavailable("the request was cancelled before " + what + " could be read or written")
	case transient.Is(err):
		return unavailable("the job store is unavailable for " + what + "; retry").because(err)
	}
	return newError(http.StatusInternalServerError, codeInternal, "the job store failed for "+what).because(err)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, e.status, armError{Error: e.body})
}

// writeJSON answers with v. A value that cannot be encoded is a fault of
// the scheduler, answered 500, never a success with an empty body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(armError{Error: armErrorBody{Code: codeInternal, Message: "encoding the answer failed: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
