package contracts

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func wireExecution() Execution {
	job := JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jobs", Job: "nightly"}
	due := time.Date(2026, 1, 2, 5, 15, 0, 0, time.UTC)
	return Execution{
		Version: MessageVersion, OccurrenceID: OccurrenceID(job, due, MainAction, 1), OccurrenceKey: OccurrenceKey(job, due, MainAction, 1),
		Job: job, ActionName: MainAction, Occurrence: 12, Attempt: 1, ExpectedTime: due, DispatchedAt: due.Add(4 * time.Millisecond), NotBefore: due.Add(90 * time.Second),
		Action:  json.RawMessage(`{"type":"Http","request":{"uri":"https://example.com/a?b=c&d=é","method":"POST","headers":{"X-N":"1"},"body":"{\"k\": [1, 2.5e3, -0, true, null]}"}}`),
		Timeout: 60000, Revision: 41, LastAttempt: true, LastOccurrence: true,
	}
}

func wireResult() Result {
	r := wireExecution().Result(ActionHTTP)
	r.StartTime, r.EndTime = r.ExpectedTime.Add(30*time.Second+118*time.Millisecond), r.ExpectedTime.Add(31*time.Second+204*time.Millisecond)
	r.Outcome, r.StatusCode, r.Worker = Failed, 500, "worker-1"
	r.Error = "Http Action - Response from host 'example.com': 'InternalServerError'"
	r.Message = r.Error + " Response Headers: Content-Type: text/plain; charset=utf-8\n Body: \"oops\" <&> \u2028 ünïcode\t\x01"
	r.Response = "oops\n"
	return r
}

// wireSeeds are messages as the roles write them, and variants that
// encoding/json reads differently from the plain form.
func wireSeeds() [][]byte {
	exec, _ := json.Marshal(wireExecution())
	event, _ := json.Marshal(wireResult().Event())
	seeds := [][]byte{exec, event}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"v":1,"v":2}`, `{"V":1}`, `{"job":{"Job":"x"}}`, `{"attempt":1.0}`, `{"attempt":-0}`,
		`{"attempt":01}`, `{"revision":-1}`, `{"revision":18446744073709551616}`, `{"occurrence":9223372036854775808}`,
		`{"expectedTime":"2026-01-02T05:15:00Z"} `, `{"expectedTime":"2026-01-02T05:15:00\u005a"}`, `{"expectedTime":null}`,
		`{"expectedTime":"2026-1-02T05:15:00Z"}`, `{"action":null}`, `{"action":[1,{"a":"\ud83d\ude00"}]}`, `{"action":"x"}`,
		`{"occurrenceKey":"a\u00e9\ud83d\ude00\n\"\\\/"}`, `{"occurrenceKey":"\ud83d"}`, `{"occurrenceKey":"\ud83d\u0041"}`, `{"occurrenceKey":"\ude00\ud83d"}`,
		`{"occurrenceKey":"\ufffd\uFFFD"}`, `{"occurrenceKey":"\u00"}`, `{"occurrenceKey":"\u00G1"}`, `{"occurrenceKey":"\ud83d\ud83d\ude00"}`, "{\"occurrenceKey\":\"\xff\"}", `{"lastAttempt":true,"lastOccurrence":false}`,
		`{"lastAttempt":"true"}`, `{"occurrenceId":1}`, `{"job":null}`, `{"timeoutMs":1e3}`, `{"v":1}x`, `{"v":1,}`, `{"data":{"statusCode":200}}`,
		`{"data":{"message":"a\tb\u0041"},"time":"2026-01-02T05:15:31.204Z"}`, `{"data":null}`, `{"specversion":"1.0","data":{"v":1,"v":1}}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// checkWire fails unless decode gives what json.Unmarshal gives of data,
// value and whether it failed alike.
func checkWire[T any](t *testing.T, data []byte, decode func([]byte) (T, error)) {
	t.Helper()
	got, gotErr := decode(data)
	var want T
	wantErr := json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v (%v), encoding/json %+v (%v)", data, got, gotErr, want, wantErr)
	}
}

func TestWireDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, seed := range wireSeeds() {
		checkWire(t, seed, DecodeExecution)
		checkWire(t, seed, decodeResultEvent)
	}
}

// The messages as the roles write them are read by the fast reader, not
// handed to encoding/json.
func TestWireReadsTheMessagesAsWritten(t *testing.T) {
	t.Parallel()
	exec, _ := json.Marshal(wireExecution())
	var e, want Execution
	_ = json.Unmarshal(exec, &want)
	if r := (wireReader{data: exec}); !r.execution(&e) || !r.end() || !reflect.DeepEqual(e, want) {
		t.Errorf("execution %s read as %+v", exec, e)
	}
	event, _ := json.Marshal(wireResult().Event())
	var ev ResultEvent
	if r := (wireReader{data: event}); !r.resultEvent(&ev) || !r.end() || !reflect.DeepEqual(ev, wireResult().Event()) {
		t.Errorf("result event %s read as %+v", event, ev)
	}
}

func FuzzWire(f *testing.F) {
	for _, seed := range wireSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWire(t, data, DecodeExecution)
		checkWire(t, data, decodeResultEvent)
	})
}

func BenchmarkDecodeExecution(b *testing.B) {
	data, _ := json.Marshal(wireExecution())
	benchDecode(b, data, DecodeExecution)
}

func BenchmarkDecodeResultEvent(b *testing.B) {
	data, _ := json.Marshal(wireResult().Event())
	benchDecode(b, data, decodeResultEvent)
}

// benchDecode compares decoding data with wire and with encoding/json.
func benchDecode[T any](b *testing.B, data []byte, wire func([]byte) (T, error)) {
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = wire(data)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v T
			_ = json.Unmarshal(data, &v)
		}
	})
}
