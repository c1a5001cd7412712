package timer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// An entry is stored in its partition's state hash as one string of ten
// '|'-separated fields:
//
//	token|due|expected-due|occurrence|attempt|action|remaining|revision|slot|jobKey
//
// where
//
//   - token is the claim token, empty while the entry is pending;
//   - due is the due time in unix ms while the entry is claimed, and empty
//     while it is pending: the due set's score holds it then;
//   - expected-due is Expected minus Due in ms;
//   - occurrence, attempt, remaining and revision are decimal integers;
//   - integers (due excepted) are written as nothing when 0, so the usual
//     "same expected time, first attempt" costs two bytes;
//   - action is M (MainAction) or E (ErrorAction);
//   - slot may not contain '|'; the job key comes last and may contain
//     anything. The first lower-case GUID in the key's first 255 bytes (the
//     subscription), at its start or after a '/' or '.', is stored as its 16
//     bytes: the key is then a 0 byte, a byte giving the GUID's offset, the
//     text before the GUID, the GUID's bytes and the text after it. Any other
//     key starting with a 0 or 1 byte gets a 1 byte in front.
//
// A pending entry of a typical job ("<GUID>/<rg>/<collection>/<job>", 86
// bytes) packs into 90 bytes, which Redis allocates in 96.
const fieldCount = 10

// guidLen is the length of a GUID's text, 8-4-4-4-12 hexadecimal digits.
const guidLen = 36

// Markers at the start of a packed job key.
const (
	markGUID    = 0 // an offset byte follows, then the key with its GUID as 16 bytes
	markLiteral = 1 // the key follows as is
)

// pack returns the entry as stored while pending: no token, no due time.
func (e Entry) pack() string {
	due := e.Due.UnixMilli()
	b := make([]byte, 0, 40+len(e.Slot)+len(e.JobKey))
	b = append(b, "||"...)
	b = appendInt(b, e.Expected.UnixMilli()-due)
	b = appendInt(b, e.Occurrence)
	b = appendInt(b, int64(e.Attempt))
	b = append(b, actionCode(e.Action), '|')
	b = appendInt(b, e.Remaining)
	if e.Revision != 0 {
		b = strconv.AppendUint(b, e.Revision, 10)
	}
	b = append(b, '|')
	b = append(b, e.Slot...)
	b = append(b, '|')
	return string(appendJobKey(b, e.JobKey))
}

// appendInt appends n (nothing for 0) and a separator.
func appendInt(b []byte, n int64) []byte {
	if n != 0 {
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '|')
}

func actionCode(a contracts.ActionName) byte {
	if a == contracts.ErrorAction {
		return 'E'
	}
	return 'M'
}

// appendJobKey appends key with its subscription GUID as 16 bytes.
func appendJobKey(b []byte, key string) []byte {
	if at, guid, ok := findGUID(key); ok {
		b = append(b, markGUID, byte(at))
		b = append(b, key[:at]...)
		b = append(b, guid[:]...)
		return append(b, key[at+guidLen:]...)
	}
	if key != "" && key[0] <= markLiteral {
		b = append(b, markLiteral)
	}
	return append(b, key...)
}

// findGUID returns the offset and bytes of the first lower-case GUID in key
// that starts the key or follows a '/' or '.', within its first 255 bytes.
func findGUID(key string) (int, [16]byte, bool) {
	for at := 0; at <= min(255, len(key)-guidLen); at++ {
		if at > 0 && key[at-1] != '/' && key[at-1] != '.' {
			continue
		}
		if guid, ok := parseGUID(key[at : at+guidLen]); ok {
			return at, guid, true
		}
	}
	return 0, [16]byte{}, false
}

// readJobKey reverses appendJobKey.
func readJobKey(s string) (string, error) {
	switch {
	case s == "" || s[0] > markLiteral:
		return s, nil
	case s[0] == markLiteral:
		return s[1:], nil
	case len(s) < 2 || len(s) < 2+int(s[1])+16:
		return "", errors.New("the job key's GUID is cut short")
	}
	at := 2 + int(s[1])
	return s[2:at] + formatGUID(s[at:at+16]) + s[at+16:], nil
}

// parseGUID decodes a GUID written in lower case, the only form formatGUID
// gives back unchanged.
func parseGUID(s string) ([16]byte, bool) {
	var guid [16]byte
	if len(s) != guidLen || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return guid, false
	}
	digits := s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if strings.ToLower(digits) != digits {
		return guid, false
	}
	if _, err := hex.Decode(guid[:], []byte(digits)); err != nil {
		return guid, false
	}
	return guid, true
}

func formatGUID(b string) string {
	h := hex.EncodeToString([]byte(b))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// unpack reads a packed entry and its claim token. A pending entry's value
// has no due time: pendingDue (unix ms) is used, and hasPendingDue false
// makes that an error.
func unpack(v string, pendingDue int64, hasPendingDue bool) (Entry, string, error) {
	f := strings.SplitN(v, "|", fieldCount)
	if len(f) != fieldCount {
		return Entry{}, "", fmt.Errorf("packed entry %q has %d fields, want %d", v, len(f), fieldCount)
	}
	var p intParser
	var due int64
	switch {
	case f[1] != "":
		due = p.int(f[1], "due")
	case hasPendingDue:
		due = pendingDue
	default:
		p.fail("due", "")
	}
	e := Entry{
		Due:        time.UnixMilli(due).UTC(),
		Expected:   time.UnixMilli(due + p.int(f[2], "expected")).UTC(),
		Occurrence: p.int(f[3], "occurrence"),
		Attempt:    int(p.int(f[4], "attempt")),
		Remaining:  p.int(f[6], "remaining"),
		Revision:   p.uint(f[7], "revision"),
		Slot:       f[8],
	}
	switch f[5] {
	case "M":
		e.Action = contracts.MainAction
	case "E":
		e.Action = contracts.ErrorAction
	default:
		p.fail("action", f[5])
	}
	key, err := readJobKey(f[9])
	if p.err == nil {
		p.err = err
	}
	if p.err != nil {
		return Entry{}, "", fmt.Errorf("packed entry %q: %w", v, p.err)
	}
	e.JobKey = key
	return e, f[0], nil
}

// intParser parses the integer fields of a packed entry and keeps the first
// error, so unpack reads as a list of fields.
type intParser struct{ err error }

func (p *intParser) int(s, field string) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.fail(field, s)
	}
	return n
}

func (p *intParser) uint(s, field string) uint64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		p.fail(field, s)
	}
	return n
}

func (p *intParser) fail(field, s string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s %q is not valid", field, s)
	}
}
