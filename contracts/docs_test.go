package contracts

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// jsonBlocks returns the ```json blocks of a document.
func jsonBlocks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// The result event and history entry shown in the documentation are what
// the code reads and writes.
func TestTheDocumentedMessagesParse(t *testing.T) {
	t.Parallel()
	events := 0
	for _, b := range jsonBlocks(t, "../docs/nats.md") {
		if !strings.Contains(b, `"specversion"`) {
			continue
		}
		events++
		r, err := ParseResultEvent([]byte(b))
		if err != nil {
			t.Errorf("the documented result event does not parse: %v", err)
			continue
		}
		if ev := r.Event(); ev.Type != EventFailed || ev.Subject != "20260102T051500Z/MainAction/1" {
			t.Errorf("the documented event's attributes are not the ones its data gives: %+v", ev)
		}
	}
	histories := 0
	for _, b := range jsonBlocks(t, "../docs/actions.md") {
		var h JobHistoryDefinition
		dec := json.NewDecoder(strings.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			t.Errorf("a documented history entry does not parse: %v", err)
			continue
		}
		histories++
		if h.Type != JobHistoryResourceType || h.Properties.ActionName != MainAction || h.Properties.RepeatCount != 12 {
			t.Errorf("history entry %+v", h)
		}
	}
	if events != 1 || histories != 1 {
		t.Fatalf("found %d result events and %d history entries in the documents, want 1 of each", events, histories)
	}
}
