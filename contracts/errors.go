package contracts

import (
	"fmt"
	"strings"
)

// FieldError is one violation in a definition: the JSON path of the field and
// the rule it breaks, in words a user can act on.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// FieldErrors collects every violation of a definition, so that all of them
// are reported together. Only the first error for a path is kept: a field
// that could not be read is not also reported as missing.
type FieldErrors []FieldError

// Add records a violation at path unless that path already has one.
func (e *FieldErrors) Add(path, format string, args ...any) {
	for _, fe := range *e {
		if fe.Path == path {
			return
		}
	}
	*e = append(*e, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Has reports whether path already has a violation.
func (e FieldErrors) Has(path string) bool {
	for _, fe := range e {
		if fe.Path == path {
			return true
		}
	}
	return false
}

// Err returns e as an error, or nil when it is empty.
func (e FieldErrors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// Error joins the violations, one per line.
func (e FieldErrors) Error() string {
	lines := make([]string, len(e))
	for i, fe := range e {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}
