package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The forgiving decoders do not unmarshal into structs: a type error there
// stops at the first problem and names a Go type. They parse the input into
// a generic tree and read it by hand through field and object, which know
// the JSON path of every value and collect every problem in FieldErrors.

// jsonObject is a JSON object with its members in input order. Unlike the
// map that encoding/json builds, it keeps duplicate names, so they can be
// reported.
type jsonObject []jsonMember

type jsonMember struct {
	name  string
	value any
}

// maxJSONDepth bounds the nesting of the input, as encoding/json does.
const maxJSONDepth = 10000

// parseJSON parses data into a tree of jsonObject, []any, string,
// json.Number, bool and nil. A syntax error names the offending byte by its
// 1-based position, as editors count columns.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tree, err := parseValue(dec, 0)
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			return tree, nil
		} else if err == nil {
			err = errors.New("more data after the top-level value")
		}
	}
	// The decoder's offsets can be relative to its buffer. Unmarshal checks
	// the whole input first and names the exact byte.
	var syntax *json.SyntaxError
	if errors.As(json.Unmarshal(data, new(any)), &syntax) {
		return nil, fmt.Errorf("invalid JSON at byte %d: %v", syntax.Offset, syntax)
	}
	return nil, fmt.Errorf("invalid JSON at byte %d: %v", dec.InputOffset(), err)
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := jsonObject{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, isString := tok.(string)
			if !isString { // the decoder reports this first; kept so no input can panic
				return nil, errors.New("an object key that is not a string")
			}
			value, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jsonMember{name: name, value: value})
		}
		return obj, closing(dec)
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			value, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, value)
		}
		return arr, closing(dec)
	}
	return tok, nil
}

// closing consumes the delimiter that ends an object or array; the decoder
// has checked that it matches.
func closing(dec *json.Decoder) error {
	_, err := dec.Token()
	return err
}

// maxReported is the most problems a decoder reports. An input can have a
// problem every few bytes; past this many, more would not help the user,
// and FieldErrors.Add, which looks for an earlier error at the same path,
// would take quadratic time.
const maxReported = 100

// report collects the problems of one input.
type report struct {
	errs    FieldErrors
	dropped bool
}

// add records a problem at path, as FieldErrors.Add does, unless the report
// is full.
func (r *report) add(path, format string, args ...any) {
	if len(r.errs) >= maxReported {
		if !r.errs.Has(path) {
			r.dropped = true
		}
		return
	}
	r.errs.Add(path, format, args...)
}

// addRoot records a problem with the whole input. It is not merged with
// another problem at path "": the size and the syntax are separate problems.
func (r *report) addRoot(message string) {
	r.errs = append(r.errs, FieldError{Message: message})
}

// result returns the problems, noting any that were left out.
func (r *report) result() FieldErrors {
	if r.dropped {
		r.addRoot(fmt.Sprintf("more problems were found; only the first %d are listed", maxReported))
	}
	return r.errs
}

// childPath is the path of property name inside the value at parent.
func childPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// field is one value of the input and the JSON path it was found at. A nil
// value means the property was absent or null; both mean "not given".
type field struct {
	path  string
	value any
	rep   *report
}

func (f field) given() bool { return f.value != nil }

func (f field) fail(format string, args ...any) { f.rep.add(f.path, format, args...) }

// object returns the value as an object; ok is false when it is not given or
// not an object (which is reported).
func (f field) object() (o object, ok bool) {
	switch v := f.value.(type) {
	case nil:
		return object{}, false
	case jsonObject:
		return object{path: f.path, members: v, rep: f.rep}, true
	}
	f.fail("must be an object")
	return object{}, false
}

// str returns the value as a string; ok is false when it is not given or not
// a string (which is reported).
func (f field) str() (s string, ok bool) {
	switch v := f.value.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	}
	f.fail("must be a string")
	return "", false
}

// text is str for optional strings: "" when not given.
func (f field) text() string {
	s, _ := f.str()
	return s
}

// scalarText returns a string as it is and a number or boolean as its JSON
// text; ok is false when the value is not given or is an object or array
// (which is reported).
func (f field) scalarText() (s string, ok bool) {
	switch v := f.value.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	f.fail("must be a string")
	return "", false
}

// integer returns the value as an int when it is a JSON number with a whole
// value within int32 (5 and 5.0 both are); nil when it is not given or not
// such a number (which is reported).
func (f field) integer() *int {
	if f.value == nil {
		return nil
	}
	n, isNumber := f.value.(json.Number)
	if !isNumber {
		f.fail("must be an integer")
		return nil
	}
	v, err := parseInt32(n.String())
	if err != nil {
		f.fail("%v", err)
		return nil
	}
	return &v
}

// boolean returns the value as a bool; nil when it is not given or not a
// boolean (which is reported).
func (f field) boolean() *bool {
	switch v := f.value.(type) {
	case nil:
		return nil
	case bool:
		return &v
	}
	f.fail("must be true or false")
	return nil
}

// list returns the elements of an array, or the value itself when it is a
// single value: schedule elements may be either. Not given gives nil; an
// empty array gives a non-nil empty slice.
func (f field) list() []field {
	switch v := f.value.(type) {
	case nil:
		return nil
	case []any:
		items := make([]field, len(v))
		for i, value := range v {
			items[i] = field{path: fmt.Sprintf("%s[%d]", f.path, i), value: value, rep: f.rep}
		}
		return items
	}
	return []field{f}
}

// dateTime returns the value as an instant; see ParseDateTime for the
// formats and loc. Nil when it is not given or not a valid date-time (which is
// reported).
func (f field) dateTime(loc *time.Location) *time.Time {
	s, ok := f.str()
	if !ok {
		return nil
	}
	t, err := ParseDateTime(s, loc)
	if err != nil {
		f.fail("%v", err)
		return nil
	}
	return &t
}

// duration returns the value as given, after checking that ParseDuration
// accepts it.
func (f field) duration() string {
	s, ok := f.str()
	if !ok {
		return ""
	}
	if _, err := ParseDuration(s); err != nil {
		f.fail("%v", err)
	}
	return s
}

// enum returns the canonical value of values that the string equals, ignoring
// case; ok is false when it is not given or not one of them (which is
// reported).
func enum[T ~string](f field, values []T) (v T, ok bool) {
	s, ok := f.str()
	if !ok {
		return v, false
	}
	if v, ok = ParseEnum(s, values); !ok {
		f.fail("%q is not one of %s", s, EnumList(values))
	}
	return v, ok
}

// enumValue is enum without ok, for optional properties.
func enumValue[T ~string](f field, values []T) T {
	v, _ := enum(f, values)
	return v
}

// readSet reads one value or an array of values with read, and returns them
// sorted by cmp with duplicates removed. Not given gives nil; an empty array
// gives a non-nil empty slice.
func readSet[T any](f field, read func(field) (T, bool), cmp func(a, b T) int) []T {
	items := f.list()
	if items == nil {
		return nil
	}
	set := make([]T, 0, len(items))
	for _, item := range items {
		if !item.given() {
			item.fail("must not be null")
			continue
		}
		if v, ok := read(item); ok {
			set = append(set, v)
		}
	}
	slices.SortFunc(set, cmp)
	return slices.CompactFunc(set, func(a, b T) bool { return cmp(a, b) == 0 })
}

// stringMap reads an object of strings such as headers; numbers and booleans
// are kept as their JSON text and null values are left out. With foldCase,
// names that differ only in case are duplicates.
func (f field) stringMap(foldCase bool) map[string]string {
	o, ok := f.object()
	if !ok {
		return nil
	}
	m := make(map[string]string, len(o.members))
	seen := make(map[string]bool, len(o.members))
	for _, member := range o.members {
		entry := o.at(member.name, member.value)
		key := member.name
		if foldCase {
			key = strings.ToLower(key)
		}
		if seen[key] {
			entry.fail("given more than once%s", caseNote(foldCase))
			continue
		}
		seen[key] = true
		if v, ok := entry.scalarText(); ok {
			m[member.name] = v
		}
	}
	return m
}

func caseNote(foldCase bool) string {
	if foldCase {
		return " (names are case-insensitive)"
	}
	return ""
}

// object is a JSON object of the input and its path.
type object struct {
	path    string
	members jsonObject
	rep     *report
}

func (o object) at(name string, value any) field {
	return field{path: childPath(o.path, name), value: value, rep: o.rep}
}

// has reports whether the object has a property name, in any case.
func (o object) has(name string) bool {
	return slices.ContainsFunc(o.members, func(m jsonMember) bool { return strings.EqualFold(m.name, name) })
}

// get returns property name, matched case-insensitively; its path uses name
// as given here, the canonical spelling. A property given more than once is
// reported and treated as not given.
func (o object) get(name string) field {
	var (
		found     any
		count     int
		sameCase  = true
		firstName string
	)
	for _, m := range o.members {
		if !strings.EqualFold(m.name, name) {
			continue
		}
		if count == 0 {
			firstName = m.name
		} else if m.name != firstName {
			sameCase = false
		}
		found = m.value
		count++
	}
	f := o.at(name, found)
	if count > 1 {
		if sameCase {
			f.fail("given more than once")
		} else {
			f.fail("given more than once (property names are case-insensitive)")
		}
		f.value = nil
	}
	return f
}

// str returns property name as a string; see field.text.
func (o object) str(name string) string { return o.get(name).text() }

// parseInt32 parses the text of a JSON number whose value is a whole number
// within int32, such as 5, 5.0 or 5e1. It works on the decimal digits, so
// that no float rounding can turn 2147483647.0000000001 or 1e-400 into an
// integer.
func parseInt32(num string) (int, error) {
	const (
		notInteger = "must be an integer"
		outOfRange = "must be an integer between -2147483648 and 2147483647"
	)
	if v, err := strconv.ParseInt(num, 10, 32); err == nil {
		return int(v), nil
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New(outOfRange)
	}
	mantissa, expText, _ := strings.Cut(strings.ToLower(num), "e")
	negative := strings.HasPrefix(mantissa, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mantissa, "-"), ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, nil
	}
	exp, err := strconv.Atoi(expText)
	if expText == "" {
		exp, err = 0, nil
	}
	if err != nil { // an exponent beyond int: huge or tiny
		if strings.HasPrefix(expText, "-") {
			return 0, errors.New(notInteger)
		}
		return 0, errors.New(outOfRange)
	}
	// Bound the exponent so the arithmetic below cannot overflow; no input
	// has 2^40 digits, so this changes no result.
	exp = min(max(exp, -1<<40), 1<<40)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed) - len(frac)
	switch {
	case exp < 0:
		return 0, errors.New(notInteger)
	case len(trimmed)+exp > 10:
		return 0, errors.New(outOfRange)
	}
	v, _ := strconv.ParseInt(trimmed+strings.Repeat("0", exp), 10, 64)
	if negative {
		v = -v
	}
	if v < -1<<31 || v > 1<<31-1 {
		return 0, errors.New(outOfRange)
	}
	return int(v), nil
}
