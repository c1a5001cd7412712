package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
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

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, armError{Error: e.body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
