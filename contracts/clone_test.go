package contracts

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// filled returns a JobProperties with every field set, through error actions
// nested twice, so that a field added later is covered without changing the
// test.
func filled() JobProperties {
	var p JobProperties
	n := 0
	fill(reflect.ValueOf(&p).Elem(), 0, &n)
	return p
}

// fill sets v and everything below it to distinct non-zero values.
func fill(v reflect.Value, depth int, n *int) {
	*n++
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", *n*60))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		if depth > 6 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1, n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), depth, n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), depth, n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			key, value := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(key, depth, n)
			fill(value, depth, n)
			v.SetMapIndex(key, value)
		}
	}
}

// assertNoSharing fails when a and b share a pointer, map or slice array.
func assertNoSharing(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the pointer", path)
		}
		assertNoSharing(t, path, a.Elem(), b.Elem())
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the map", path)
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the slice's array", path)
		}
		for i := range min(a.Len(), b.Len()) {
			assertNoSharing(t, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Struct:
		if a.Type() == reflect.TypeFor[time.Time]() {
			return // a time's location is shared by design
		}
		for i := range a.NumField() {
			assertNoSharing(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	}
}

func TestJobPropertiesClone(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		p    JobProperties
	}{
		{"a job with every field set is copied deeply", filled()},
		{"an empty job is copied", JobProperties{}},
		{
			"empty slices and maps stay empty, not nil",
			JobProperties{
				Action:     &JobAction{Request: &HTTPRequest{Headers: map[string]string{}}},
				Recurrence: &Recurrence{Schedule: &Schedule{Hours: []int{}, WeekDays: []DayOfWeek{}, MonthlyOccurrences: []MonthlyOccurrence{}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.p.Clone()
			if !reflect.DeepEqual(c, tt.p) {
				t.Fatalf("Clone =\n%+v\nwant\n%+v", c, tt.p)
			}
			assertNoSharing(t, "JobProperties", reflect.ValueOf(tt.p), reflect.ValueOf(c))
		})
	}

	t.Run("the filler reaches a nested error action", func(t *testing.T) {
		t.Parallel()
		if p := filled(); p.Action.ErrorAction.ErrorAction == nil || p.Action.ErrorAction.ErrorAction.Request.Authentication == nil {
			t.Fatal("filled() does not reach the second error action; raise its depth")
		}
	})
}
