package timer

import (
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// guidKey is a job key of the usual shape, with a subscription GUID.
const guidKey = "0b5c2a7e-1c1d-4f57-9a43-5d2b1e6c7f80/rg-prod/orders/nightly"

func TestPack(t *testing.T) {
	t.Parallel()

	t.Run("a typical pending entry packs into few bytes", func(t *testing.T) {
		t.Parallel()
		e := entry("nightly", "", t0)
		if got, want := e.pack(), "|||1||M|-1|7||sub/rg/coll/nightly"; got != want {
			t.Errorf("pack = %q, want %q", got, want)
		}
	})

	t.Run("a subscription GUID is stored as its 16 bytes", func(t *testing.T) {
		t.Parallel()
		e := entry("", "", t0)
		e.JobKey = guidKey
		want := "|||1||M|-1|7||\x00\x00\x0b\x5c\x2a\x7e\x1c\x1d\x4f\x57\x9a\x43\x5d\x2b\x1e\x6c\x7f\x80/rg-prod/orders/nightly"
		if got := e.pack(); got != want {
			t.Errorf("pack = %q, want %q", got, want)
		}
	})

	t.Run("a GUID after a prefix is stored as its 16 bytes too", func(t *testing.T) {
		t.Parallel()
		key := "j." + strings.ReplaceAll(guidKey, "/", ".") // contracts.JobRef.KVKey's shape
		packed := appendJobKey(nil, key)
		if want := 2 + len(key) - 20; len(packed) != want {
			t.Errorf("packed %q into %d bytes, want %d", key, len(packed), want)
		}
	})

	t.Run("every field survives a round trip", func(t *testing.T) {
		t.Parallel()
		for _, e := range []Entry{
			entry("a", "", t0),
			{JobKey: "x|y", Slot: "retry", Due: t0.Add(-time.Hour), Expected: t0, Occurrence: 1 << 40,
				Attempt: 12, Action: contracts.ErrorAction, Remaining: 0, Revision: ^uint64(0)},
			{JobKey: guidKey, Due: time.Date(1901, 1, 1, 0, 0, 0, 0, time.UTC), Expected: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Action: contracts.MainAction},
			{JobKey: strings.ToUpper(guidKey), Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: guidKey[:36], Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: "\x00zero", Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: "\x01one", Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: "0b5c2a7e-1c1d-4f57-9a43-5d2b1e6c7f8g/not-hex", Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: "j." + strings.ReplaceAll(guidKey, "/", "."), Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: strings.Repeat("x/", 140) + guidKey, Due: t0, Expected: t0, Action: contracts.MainAction},
			{JobKey: "x" + guidKey, Due: t0, Expected: t0, Action: contracts.MainAction},
		} {
			got, token, err := unpack(e.pack(), e.Due.UnixMilli(), true)
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				t.Errorf("token %q, want none", token)
			}
			assertEntry(t, got, e)
		}
	})

	t.Run("a claimed entry's token and due time are read back", func(t *testing.T) {
		t.Parallel()
		packed := entry("a", "", t0).pack()
		claimed := "TOKEN|1772366400000" + packed[1:]
		e, token, err := unpack(claimed, 0, false)
		if err != nil || token != "TOKEN" || !e.Due.Equal(t0) {
			t.Errorf("unpack = %v, %q, %v", e.Due, token, err)
		}
	})

	t.Run("malformed values are rejected", func(t *testing.T) {
		t.Parallel()
		good := entry("a", "", t0).pack()
		for _, v := range []string{
			"", "|", "|1|2|3",
			good[:len(good)-len("sub/rg/coll/a")] + "\x00\x00short",
			good[:len(good)-len("sub/rg/coll/a")] + "\x00\xff" + strings.Repeat("x", 200),
			good[:len(good)-len("sub/rg/coll/a")] + "\x00",
			strings.Replace(good, "|M|", "|X|", 1),
			strings.Replace(good, "|-1|", "|z|", 1),
			"t|17e3" + good[1:],
		} {
			if _, _, err := unpack(v, 0, true); err == nil {
				t.Errorf("unpack(%q) succeeded", v)
			}
		}
		if _, _, err := unpack(good, 0, false); err == nil {
			t.Error("a pending entry without a due time was accepted")
		}
	})
}

func FuzzUnpack(f *testing.F) {
	f.Add(entry("a", "retry", t0).pack())
	f.Add("tok|1|2|3|4|E|-1|5|s|k|extra")
	f.Add("||||||M||||\x00" + strings.Repeat("\xff", 20))
	f.Fuzz(func(t *testing.T, v string) {
		e, token, err := unpack(v, 1, true)
		if err != nil {
			return
		}
		// what unpacks packs back to a value that unpacks to the same entry
		again, token2, err := unpack(token+"|"+e.pack()[1:], e.Due.UnixMilli(), true)
		if err != nil || token2 != token {
			t.Fatalf("repacked %q: %v", v, err)
		}
		assertEntry(t, again, e)
	})
}
