package contracts

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Executions and result events are decoded once per attempt by the worker
// and by each consumer of results, so their decoding is on the path of
// every action. DecodeExecution and ParseResultEvent read them with a
// reader of their own, several times faster than encoding/json's
// reflection, and give the same value: the reader takes only what it
// reads exactly as encoding/json would (the exact member names, each once;
// strings, integers, booleans and times in their plain form) and hands
// anything else (another member name, a null, an escape it does not
// handle, invalid input) to encoding/json, which decides. The wire format
// is encoding/json's either way.

// DecodeExecution decodes an execution message as json.Unmarshal does.
func DecodeExecution(data []byte) (Execution, error) {
	var e Execution
	if r := (wireReader{data: data}); r.execution(&e) && r.end() {
		return e, nil
	}
	return unmarshal[Execution](data)
}

// decodeResultEvent decodes a result event as json.Unmarshal does.
func decodeResultEvent(data []byte) (ResultEvent, error) {
	var ev ResultEvent
	if r := (wireReader{data: data}); r.resultEvent(&ev) && r.end() {
		return ev, nil
	}
	return unmarshal[ResultEvent](data)
}

// unmarshal decodes data with encoding/json; its value does not make the
// fast path's escape to the heap.
func unmarshal[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// wireReader reads one JSON value from data. Each method reports false
// when the input is not of the plain form it reads; the caller then leaves
// the input to encoding/json.
type wireReader struct {
	data []byte
	pos  int
}

func (r *wireReader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// byte consumes c, after white space.
func (r *wireReader) byte(c byte) bool {
	r.space()
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (r *wireReader) end() bool {
	r.space()
	return r.pos == len(r.data)
}

// members reads the members of an object one by one:
//
//	m := r.members()
//	for m.next(r) {
//		switch string(m.name) { ... } // read the value, or return false
//	}
//	return m.ok
//
// A name given twice, one with an escape, and more than maxMembers names
// end the reading unread.
type members struct {
	name  []byte
	names [maxMembers][]byte // the names read, names[:seen]
	seen  int
	after bool // a member was read: a comma or the end follows
	done  bool
	ok    bool // the object was read whole
}

// maxMembers is the most members an object read by members may have: more
// than a Result has.
const maxMembers = 24

// maxWireDepth is how deep the values the reader reads may nest.
const maxWireDepth = 64

func (r *wireReader) members() members { return members{done: !r.byte('{')} }

// next moves r to the next member's value and reports whether there is one.
func (m *members) next(r *wireReader) bool {
	if m.done {
		return false
	}
	m.done = true // until the next member's name is read
	if m.after && !r.byte(',') || !m.after && r.byte('}') {
		m.ok = !m.after || r.byte('}')
		return false
	}
	r.space()
	start := r.pos
	if !r.scanString(false) {
		return false
	}
	m.name = r.data[start+1 : r.pos-1]
	if !r.byte(':') || m.seen == len(m.names) {
		return false
	}
	for _, s := range m.names[:m.seen] {
		if string(s) == string(m.name) {
			return false
		}
	}
	m.names[m.seen] = m.name
	m.seen++
	m.after, m.done = true, false
	r.space()
	return true
}

// rawString reads a string without escapes, valid UTF-8 and free of
// control characters, and returns its content.
func (r *wireReader) rawString() (string, bool) {
	start := r.pos
	if !r.scanString(false) {
		return "", false
	}
	return string(r.data[start+1 : r.pos-1]), true
}

// str reads a string value. Of the escapes \\u, it reads those of a
// character other than U+FFFD and those of a surrogate pair.
func (r *wireReader) str(s *string) bool {
	if v, ok := r.rawString(); ok {
		*s = v
		return true
	}
	if r.pos >= len(r.data) || r.data[r.pos] != '"' {
		return false
	}
	buf := make([]byte, 0, 64)
	for i := r.pos + 1; i < len(r.data); i++ {
		c := r.data[i]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return false
			}
			*s = string(buf)
			r.pos = i + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			buf = append(buf, c)
			continue
		}
		if i+1 >= len(r.data) {
			return false
		}
		i++
		switch r.data[i] {
		case '"', '\\', '/':
			buf = append(buf, r.data[i])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			c, ok := r.hex4(i + 1)
			i += 4
			if ok && utf16.IsSurrogate(c) {
				// Only a pair: encoding/json has its own rules for a lone one.
				low, isLow := rune(0), false
				if i+2 < len(r.data) && r.data[i+1] == '\\' && r.data[i+2] == 'u' {
					low, isLow = r.hex4(i + 3)
				}
				c, ok = utf16.DecodeRune(c, low), isLow
				i += 6
			}
			if !ok || c == utf8.RuneError {
				return false
			}
			buf = utf8.AppendRune(buf, c)
		default:
			return false
		}
	}
	return false
}

// hex4 reads the four hex digits at i.
func (r *wireReader) hex4(i int) (rune, bool) {
	if i+4 > len(r.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(r.data[i:i+4]), 16, 16)
	return rune(v), err == nil
}

// digits returns the integer literal at the reader: an optional minus and
// digits without a leading zero, not followed by a fraction or an exponent.
func (r *wireReader) digits() ([]byte, bool) {
	start, i := r.pos, r.pos
	if i < len(r.data) && r.data[i] == '-' {
		i++
	}
	first := i
	for i < len(r.data) && r.data[i] >= '0' && r.data[i] <= '9' {
		i++
	}
	switch {
	case i == first, r.data[first] == '0' && i-first > 1:
		return nil, false
	case i < len(r.data) && (r.data[i] == '.' || r.data[i] == 'e' || r.data[i] == 'E'):
		return nil, false
	}
	r.pos = i
	return r.data[start:i], true
}

func (r *wireReader) int64(v *int64) bool {
	d, ok := r.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(d), 10, 64)
	*v = n
	return err == nil
}

func (r *wireReader) int(v *int) bool {
	var n int64
	if !r.int64(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}

func (r *wireReader) uint64(v *uint64) bool {
	d, ok := r.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(d), 10, 64)
	*v = n
	return err == nil
}

func (r *wireReader) bool(v *bool) bool {
	for _, lit := range [...]string{"true", "false"} {
		if len(r.data)-r.pos >= len(lit) && string(r.data[r.pos:r.pos+len(lit)]) == lit {
			r.pos += len(lit)
			*v = lit == "true"
			return true
		}
	}
	return false
}

// time reads a time as time.Time's UnmarshalJSON does.
func (r *wireReader) time(t *time.Time) bool {
	start := r.pos
	if !r.scanString(false) {
		return false
	}
	return t.UnmarshalJSON(r.data[start:r.pos]) == nil
}

// scanString reads past a string without escapes (or, with escapes set,
// with any), valid UTF-8 and free of control characters.
func (r *wireReader) scanString(escapes bool) bool {
	if r.pos >= len(r.data) || r.data[r.pos] != '"' {
		return false
	}
	ascii := true
	for i := r.pos + 1; i < len(r.data); i++ {
		switch c := r.data[i]; {
		case c == '"':
			if !ascii && !utf8.Valid(r.data[r.pos:i]) {
				return false
			}
			r.pos = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if !escapes || i+1 >= len(r.data) {
				return false
			}
			i++
			switch r.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(r.data) {
					return false
				}
				for _, h := range r.data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return false
}

// raw reads any valid JSON value but null and returns a copy of it, as
// json.RawMessage keeps it.
func (r *wireReader) raw(m *json.RawMessage) bool {
	start := r.pos
	if !r.skip(0) {
		return false
	}
	*m = append(json.RawMessage(nil), r.data[start:r.pos]...)
	return true
}

// skip reads a JSON value other than null, nested at most maxWireDepth.
func (r *wireReader) skip(depth int) bool {
	if depth > maxWireDepth || r.pos >= len(r.data) {
		return false
	}
	switch c := r.data[r.pos]; {
	case c == '{':
		m := r.members()
		for m.next(r) {
			if !r.skip(depth + 1) {
				return false
			}
		}
		return m.ok
	case c == '[':
		r.pos++
		if r.byte(']') {
			return true
		}
		for {
			r.space()
			if !r.skip(depth + 1) {
				return false
			}
			if r.byte(',') {
				continue
			}
			return r.byte(']')
		}
	case c == '"':
		return r.scanString(true)
	case c == 't' || c == 'f':
		var b bool
		return r.bool(&b)
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return false
}

// number reads a number literal of any form.
func (r *wireReader) number() bool {
	i := r.pos
	digits := func() bool {
		start := i
		for i < len(r.data) && r.data[i] >= '0' && r.data[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(r.data) && r.data[i] == '-' {
		i++
	}
	switch {
	case i < len(r.data) && r.data[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(r.data) && r.data[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(r.data) && (r.data[i] == 'e' || r.data[i] == 'E') {
		i++
		if i < len(r.data) && (r.data[i] == '+' || r.data[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	r.pos = i
	return true
}

func (r *wireReader) jobRef(j *JobRef) bool {
	m := r.members()
	for m.next(r) {
		ok := false
		switch string(m.name) {
		case "subscription":
			ok = r.str(&j.Subscription)
		case "resourceGroup":
			ok = r.str(&j.ResourceGroup)
		case "collection":
			ok = r.str(&j.Collection)
		case "job":
			ok = r.str(&j.Job)
		}
		if !ok {
			return false
		}
	}
	return m.ok
}

func (r *wireReader) execution(e *Execution) bool {
	m := r.members()
	for m.next(r) {
		ok := false
		switch string(m.name) {
		case "v":
			ok = r.int(&e.Version)
		case "occurrenceId":
			ok = r.str(&e.OccurrenceID)
		case "occurrenceKey":
			ok = r.str(&e.OccurrenceKey)
		case "job":
			ok = r.jobRef(&e.Job)
		case "actionName":
			ok = r.str((*string)(&e.ActionName))
		case "occurrence":
			ok = r.int64(&e.Occurrence)
		case "attempt":
			ok = r.int(&e.Attempt)
		case "expectedTime":
			ok = r.time(&e.ExpectedTime)
		case "dispatchedAt":
			ok = r.time(&e.DispatchedAt)
		case "notBefore":
			ok = r.time(&e.NotBefore)
		case "action":
			ok = r.raw(&e.Action)
		case "timeoutMs":
			ok = r.int64((*int64)(&e.Timeout))
		case "revision":
			ok = r.uint64(&e.Revision)
		case "lastAttempt":
			ok = r.bool(&e.LastAttempt)
		case "lastOccurrence":
			ok = r.bool(&e.LastOccurrence)
		}
		if !ok {
			return false
		}
	}
	return m.ok
}

func (r *wireReader) result(res *Result) bool {
	m := r.members()
	for m.next(r) {
		ok := false
		switch string(m.name) {
		case "v":
			ok = r.int(&res.Version)
		case "occurrenceId":
			ok = r.str(&res.OccurrenceID)
		case "occurrenceKey":
			ok = r.str(&res.OccurrenceKey)
		case "job":
			ok = r.jobRef(&res.Job)
		case "actionName":
			ok = r.str((*string)(&res.ActionName))
		case "occurrence":
			ok = r.int64(&res.Occurrence)
		case "attempt":
			ok = r.int(&res.Attempt)
		case "expectedTime":
			ok = r.time(&res.ExpectedTime)
		case "revision":
			ok = r.uint64(&res.Revision)
		case "lastAttempt":
			ok = r.bool(&res.LastAttempt)
		case "lastOccurrence":
			ok = r.bool(&res.LastOccurrence)
		case "actionType":
			ok = r.str((*string)(&res.ActionType))
		case "startTime":
			ok = r.time(&res.StartTime)
		case "endTime":
			ok = r.time(&res.EndTime)
		case "outcome":
			ok = r.str((*string)(&res.Outcome))
		case "statusCode":
			ok = r.int(&res.StatusCode)
		case "error":
			ok = r.str(&res.Error)
		case "message":
			ok = r.str(&res.Message)
		case "response":
			ok = r.str(&res.Response)
		case "worker":
			ok = r.str(&res.Worker)
		}
		if !ok {
			return false
		}
	}
	return m.ok
}

func (r *wireReader) resultEvent(ev *ResultEvent) bool {
	m := r.members()
	for m.next(r) {
		ok := false
		switch string(m.name) {
		case "specversion":
			ok = r.str(&ev.SpecVersion)
		case "id":
			ok = r.str(&ev.ID)
		case "source":
			ok = r.str(&ev.Source)
		case "type":
			ok = r.str(&ev.Type)
		case "subject":
			ok = r.str(&ev.Subject)
		case "time":
			ok = r.time(&ev.Time)
		case "datacontenttype":
			ok = r.str(&ev.DataContentType)
		case "data":
			ok = r.result(&ev.Data)
		}
		if !ok {
			return false
		}
	}
	return m.ok
}
