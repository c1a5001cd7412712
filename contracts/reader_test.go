package contracts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    any
		wantErr string
	}{
		{"an object keeps its members in order", `{"b":1,"a":"x"}`, jsonObject{{"b", json.Number("1")}, {"a", "x"}}, ""},
		{"duplicate names are kept", `{"a":1,"a":2}`, jsonObject{{"a", json.Number("1")}, {"a", json.Number("2")}}, ""},
		{"arrays, booleans and null parse", `[true,null,[]]`, []any{true, nil, []any{}}, ""},
		{"numbers keep their text", `1.50e3`, json.Number("1.50e3"), ""},
		{"a syntax error names the position of the offending byte", `{"a" 1}`, nil, "invalid JSON at byte 6: invalid character '1' after object key"},
		{"a trailing comma is an error", `[1,]`, nil, "invalid JSON at byte 4: invalid character ']'"},
		{"truncated input is an error", `{"a":1`, nil, "invalid JSON at byte 6: unexpected end of JSON input"},
		{"empty input is an error", ``, nil, "invalid JSON at byte 0: unexpected end of JSON input"},
		{"a second value is an error", `{} {}`, nil, "invalid JSON at byte 4: invalid character '{' after top-level value"},
		{"trailing garbage is an error", `{} x`, nil, "invalid JSON at byte 4: invalid character 'x' after top-level value"},
		{"nesting deeper than the limit is an error", strings.Repeat("[", maxJSONDepth+2), nil, "invalid JSON at byte 10001: invalid character '[' exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseJSON([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseJSON(%.40q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseJSON(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseJSON(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseInt32(t *testing.T) {
	t.Parallel()

	const notInteger, outOfRange = "must be an integer", "must be an integer between -2147483648 and 2147483647"
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
	}{
		{"a plain integer parses", "5", 5, ""},
		{"a negative integer parses", "-31", -31, ""},
		{"a zero fraction is an integer", "5.0", 5, ""},
		{"an exponent that makes a whole number is an integer", "5e1", 50, ""},
		{"a fraction cancelled by the exponent is an integer", "1.5E1", 15, ""},
		{"a negative exponent on trailing zeros is an integer", "500e-2", 5, ""},
		{"negative zero is zero", "-0.0", 0, ""},
		{"zero with a huge exponent is zero", "0e999999999999999999999", 0, ""},
		{"the largest int32 parses", "2147483647", 2147483647, ""},
		{"the smallest int32 parses", "-2147483648", -2147483648, ""},
		{"the largest int32 as a float parses", "2.147483647e9", 2147483647, ""},
		{"a fraction is not an integer", "1.5", 0, notInteger},
		{"a tiny fraction is not an integer", "2147483647.0000000001", 0, notInteger},
		{"an underflowing number is not an integer", "1e-400", 0, notInteger},
		{"a huge negative exponent is not an integer", "1e-99999999999999999999", 0, notInteger},
		{"one above int32 is out of range", "2147483648", 0, outOfRange},
		{"one below int32 is out of range", "-2147483649", 0, outOfRange},
		{"a float above int32 is out of range", "2.147483648e9", 0, outOfRange},
		{"a huge exponent is out of range", "1e99999999999999999999", 0, outOfRange},
		{"a long digit string is out of range", "123456789012345678901234567890", 0, outOfRange},
		{"an int32 with a huge fraction of zeros parses", "7." + strings.Repeat("0", 500), 7, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseInt32(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseInt32(%q) = %d, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseInt32(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// readField parses in and returns it as a field at path "x".
func readField(t *testing.T, in string) (field, *report) {
	t.Helper()
	tree, err := parseJSON([]byte(in))
	if err != nil {
		t.Fatalf("parseJSON(%q): %v", in, err)
	}
	rep := &report{}
	return field{path: "x", value: tree, rep: rep}, rep
}

func TestFieldAccessors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		read    func(field) any
		want    any
		wantErr string
	}{
		{"a string reads", `"a"`, func(f field) any { return f.text() }, "a", ""},
		{"a number is not a string", `5`, func(f field) any { return f.text() }, "", "x: must be a string"},
		{"a number reads as text where scalars are allowed", `5.10`, func(f field) any { s, _ := f.scalarText(); return s }, "5.10", ""},
		{"a boolean reads as text where scalars are allowed", `false`, func(f field) any { s, _ := f.scalarText(); return s }, "false", ""},
		{"an array is not a scalar", `[1]`, func(f field) any { s, _ := f.scalarText(); return s }, "", "x: must be a string"},
		{"a boolean reads", `true`, func(f field) any { return *f.boolean() }, true, ""},
		{"a string is not a boolean", `"true"`, func(f field) any { return f.boolean() == nil }, true, "x: must be true or false"},
		{"a string is not an integer", `"5"`, func(f field) any { return f.integer() == nil }, true, "x: must be an integer"},
		{"null is not given", `null`, func(f field) any { return f.given() }, false, ""},
		{"an object is not a list element", `{}`, func(f field) any { return len(readSet(f, readInt, func(a, b int) int { return a - b })) }, 0, "x: must be an integer"},
		{"a null list element is reported", `[1,null]`, func(f field) any { return len(readSet(f, readInt, func(a, b int) int { return a - b })) }, 1, "x[1]: must not be null"},
		{"an enum matches in any case", `"wEEk"`, func(f field) any { return enumValue(f, Frequencies) }, FrequencyWeek, ""},
		{"an unknown enum lists the values", `"fortnight"`, func(f field) any { return enumValue(f, Frequencies) }, Frequency(""), `x: "fortnight" is not one of Minute, Hour, Day, Week, Month or Year`},
		{"an empty enum is not a value", `""`, func(f field) any { return enumValue(f, RetryTypes) }, RetryType(""), `x: "" is not one of None or Fixed`},
		{"a duration is kept as given", `"pt30s"`, func(f field) any { return f.duration() }, "pt30s", ""},
		{"a bad duration is reported", `"soon"`, func(f field) any { return f.duration() }, "soon", `x: "soon" is not a duration`},
		{"a string map keeps scalars as text and drops nulls", `{"a":"1","b":2,"c":true,"d":null}`, func(f field) any { return f.stringMap(false) }, map[string]string{"a": "1", "b": "2", "c": "true"}, ""},
		{"a string map rejects nested values", `{"a":{}}`, func(f field) any { return f.stringMap(false) }, map[string]string{}, "x.a: must be a string"},
		{"a case-folding map rejects names differing in case", `{"Accept":"a","accept":"b"}`, func(f field) any { return f.stringMap(true) }, map[string]string{"Accept": "a"}, "x.accept: given more than once (names are case-insensitive)"},
		{"a case-sensitive map keeps names differing in case", `{"A":"a","a":"b"}`, func(f field) any { return f.stringMap(false) }, map[string]string{"A": "a", "a": "b"}, ""},
		{"a case-sensitive map rejects exact duplicates", `{"a":"a","a":"b"}`, func(f field) any { return f.stringMap(false) }, map[string]string{"a": "a"}, "x.a: given more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, rep := readField(t, tt.in)
			got := tt.read(f)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("read %s = %#v, want %#v", tt.in, got, tt.want)
			}
			assertErrors(t, rep.result(), tt.wantErr)
		})
	}
}

func TestObjectGet(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    any
		wantErr string
	}{
		{"a name matches in any case", `{"STARTtime":"a"}`, "a", ""},
		{"an absent name is not given", `{"other":"a"}`, nil, ""},
		{"names differing in case are given twice", `{"startTime":"a","StartTime":"b"}`, nil, "x.startTime: given more than once (property names are case-insensitive)"},
		{"an exact duplicate is given twice", `{"startTime":"a","startTime":"b"}`, nil, "x.startTime: given more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, rep := readField(t, tt.in)
			o, _ := f.object()
			got := o.get("startTime")
			if got.path != "x.startTime" {
				t.Errorf("path = %q, want the canonical x.startTime", got.path)
			}
			if !reflect.DeepEqual(got.value, tt.want) {
				t.Errorf("value = %#v, want %#v", got.value, tt.want)
			}
			assertErrors(t, rep.result(), tt.wantErr)
		})
	}
}

func TestReportIsCapped(t *testing.T) {
	t.Parallel()

	rep := &report{}
	for i := range maxReported + 10 {
		rep.add(fmt.Sprintf("p%d", i), "bad")
	}
	errs := rep.result()
	if len(errs) != maxReported+1 {
		t.Fatalf("got %d errors, want %d and a note", len(errs), maxReported)
	}
	if last := errs[len(errs)-1]; last.Path != "" || !strings.Contains(last.Message, "only the first 100") {
		t.Errorf("last error = %v, want a note that more were left out", last)
	}
}

// assertErrors checks that errs is exactly the one error want ("path:
// message", compared as a prefix) or empty when want is "".
func assertErrors(t *testing.T, errs FieldErrors, want string) {
	t.Helper()
	switch {
	case want == "" && len(errs) > 0:
		t.Errorf("unexpected errors:\n%v", errs)
	case want != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want)):
		t.Errorf("errors:\n%v\nwant exactly one starting with %q", errs, want)
	}
}
