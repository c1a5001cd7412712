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
	e = Execution{}
	err := json.Unmarshal(data, &e)
	return e, err
}

// decodeResultEvent decodes a result event as json.Unmarshal does.
func decodeResultEvent(data []byte) (ResultEvent, error) {
	var ev ResultEvent
	if r := (wireReader{data: data}); r.resultEvent(&ev) && r.end() {
		return ev, nil
	}
	ev = ResultEvent{}
	err := json.Unmarshal(data, &ev)
	return ev, err
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

// object reads an object, calling member for each member name with the
// reader at its value; member reads the value and reports whether it could.
// A name given twice, or one with an escape, is left to encoding/json.
func (r *wireReader) object(member func(name []byte) bool) bool {
	if !r.byte('{') {
		return false
	}
	if r.byte('}') {
		return true
	}
	var names [24][]byte
	seen := names[:0]
	for {
		r.space()
		start := r.pos
		if !r.scanString(false) {
			return false
		}
		name := r.data[start+1 : r.pos-1]
		if !r.byte(':') {
			return false
		}
		for _, s := range seen {
			if string(s) == string(name) {
				return false
			}
		}
		seen = append(seen, name)
		r.space()
		if !member(name) {
			return false
		}
		if r.byte(',') {
			continue
		}
		return r.byte('}')
	}
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

// skip reads a JSON value other than null, nested at most maxJSONDepth.
func (r *wireReader) skip(depth int) bool {
	if depth > maxJSONDepth || r.pos >= len(r.data) {
		return false
	}
	switch c := r.data[r.pos]; {
	case c == '{':
		return r.object(func([]byte) bool { return r.skip(depth + 1) })
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
	return r.object(func(name []byte) bool {
		switch string(name) {
		case "subscription":
			return r.str(&j.Subscription)
		case "resourceGroup":
			return r.str(&j.ResourceGroup)
		case "collection":
			return r.str(&j.Collection)
		case "job":
			return r.str(&j.Job)
		}
		return false
	})
}

func (r *wireReader) execution(e *Execution) bool {
	return r.object(func(name []byte) bool {
		switch string(name) {
		case "v":
			return r.int(&e.Version)
		case "occurrenceId":
			return r.str(&e.OccurrenceID)
		case "occurrenceKey":
			return r.str(&e.OccurrenceKey)
		case "job":
			return r.jobRef(&e.Job)
		case "actionName":
			return r.str((*string)(&e.ActionName))
		case "occurrence":
			return r.int64(&e.Occurrence)
		case "attempt":
			return r.int(&e.Attempt)
		case "expectedTime":
			return r.time(&e.ExpectedTime)
		case "dispatchedAt":
			return r.time(&e.DispatchedAt)
		case "action":
			return r.raw(&e.Action)
		case "timeoutMs":
			return r.int64((*int64)(&e.Timeout))
		case "revision":
			return r.uint64(&e.Revision)
		case "lastAttempt":
			return r.bool(&e.LastAttempt)
		case "lastOccurrence":
			return r.bool(&e.LastOccurrence)
		}
		return false
	})
}

func (r *wireReader) result(res *Result) bool {
	return r.object(func(name []byte) bool {
		switch string(name) {
		case "v":
			return r.int(&res.Version)
		case "occurrenceId":
			return r.str(&res.OccurrenceID)
		case "occurrenceKey":
			return r.str(&res.OccurrenceKey)
		case "job":
			return r.jobRef(&res.Job)
		case "actionName":
			return r.str((*string)(&res.ActionName))
		case "occurrence":
			return r.int64(&res.Occurrence)
		case "attempt":
			return r.int(&res.Attempt)
		case "expectedTime":
			return r.time(&res.ExpectedTime)
		case "revision":
			return r.uint64(&res.Revision)
		case "lastAttempt":
			return r.bool(&res.LastAttempt)
		case "lastOccurrence":
			return r.bool(&res.LastOccurrence)
		case "actionType":
			return r.str((*string)(&res.ActionType))
		case "startTime":
			return r.time(&res.StartTime)
		case "endTime":
			return r.time(&res.EndTime)
		case "outcome":
			return r.str((*string)(&res.Outcome))
		case "statusCode":
			return r.int(&res.StatusCode)
		case "error":
			return r.str(&res.Error)
		case "message":
			return r.str(&res.Message)
		case "response":
			return r.str(&res.Response)
		case "worker":
			return r.str(&res.Worker)
		}
		return false
	})
}

func (r *wireReader) resultEvent(ev *ResultEvent) bool {
	return r.object(func(name []byte) bool {
		switch string(name) {
		case "specversion":
			return r.str(&ev.SpecVersion)
		case "id":
			return r.str(&ev.ID)
		case "source":
			return r.str(&ev.Source)
		case "type":
			return r.str(&ev.Type)
		case "subject":
			return r.str(&ev.Subject)
		case "time":
			return r.time(&ev.Time)
		case "datacontenttype":
			return r.str(&ev.DataContentType)
		case "data":
			return r.result(&ev.Data)
		}
		return false
	})
}
