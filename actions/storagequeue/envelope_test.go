package storagequeue

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

// sampleAttempt is the attempt of the envelope the original service's
// documentation shows.
func sampleAttempt() actions.Attempt {
	return actions.Attempt{
		ID:         "53d0bfb54125e2c3fba3040f86b7323c",
		Job:        contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "WebJobs-SouthCentralUS", Job: "Test"},
		ActionName: contracts.MainAction,
		Expected:   time.Date(2014, 1, 30, 20, 31, 13, 0, time.UTC),
	}
}

// envelopeFields are the envelope's child elements, in order.
var envelopeFields = []string{"ExecutionTag", "ClientRequestId", "ExpectedExecutionTime", "SchedulerJobId", "SchedulerJobCollectionId", "Region", "Message"}

// parsedEnvelope is an envelope as an XML parser reads it.
type parsedEnvelope struct {
	Root   string
	Attrs  map[string]string
	Names  []string          // child elements in document order
	Fields map[string]string // child element texts
}

// parseEnvelope reads an envelope with encoding/xml, accepting the
// "utf-16" declaration for text that is already decoded, and fails the
// test if it is not one root element with text-only children.
func parseEnvelope(t testing.TB, text string) parsedEnvelope {
	t.Helper()
	p, err := readEnvelope(text)
	if err != nil {
		t.Fatalf("parsing the envelope: %v\n%s", err, text)
	}
	return p
}

func readEnvelope(text string) (parsedEnvelope, error) {
	d := xml.NewDecoder(strings.NewReader(text))
	d.CharsetReader = func(label string, input io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf-16") {
			return input, nil
		}
		return nil, fmt.Errorf("unexpected encoding %q", label)
	}
	p := parsedEnvelope{Attrs: map[string]string{}, Fields: map[string]string{}}
	depth := 0
	var current string
	var text2 strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if p.Root != "" {
					return p, fmt.Errorf("a second root element %s", tok.Name.Local)
				}
				p.Root = tok.Name.Local
				for _, a := range tok.Attr {
					p.Attrs[a.Name.Space+":"+a.Name.Local] = a.Value
				}
			case 2:
				current = tok.Name.Local
				text2.Reset()
			default:
				return p, fmt.Errorf("element %s nested in %s", tok.Name.Local, current)
			}
		case xml.EndElement:
			if depth == 2 {
				p.Names = append(p.Names, current)
				p.Fields[current] = text2.String()
			}
			depth--
		case xml.CharData:
			if depth == 2 {
				text2.Write(tok)
			} else if strings.TrimSpace(string(tok)) != "" {
				return p, fmt.Errorf("text %q outside the fields", tok)
			}
		}
	}
	return p, nil
}

// checkEnvelope fails the test unless text is the envelope of at with the
// given region and message, both as text and as parsed.
func checkEnvelope(t testing.TB, text string, at actions.Attempt, region, message string) {
	t.Helper()
	// The message may hold line breaks of its own; the layout around it is
	// checked line by line.
	head, _, ok := strings.Cut(text, "  <Message")
	if !ok {
		t.Fatalf("the envelope has no Message element:\n%q", text)
	}
	lines := strings.Split(head, "\r\n")
	wantLines := []string{
		`<?xml version="1.0" encoding="utf-16"?>`,
		`<StorageQueueMessage xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">`,
	}
	if len(lines) != 9 || lines[8] != "" {
		t.Errorf("the envelope does not start with eight CRLF lines:\n%q", text)
	} else {
		for i, want := range wantLines {
			if lines[i] != want {
				t.Errorf("line %d = %q, want %q", i+1, lines[i], want)
			}
		}
		for i, name := range envelopeFields[:6] {
			line := lines[2+i]
			if line != "  <"+name+" />" && (!strings.HasPrefix(line, "  <"+name+">") || !strings.HasSuffix(line, "</"+name+">")) {
				t.Errorf("line %d = %q, want the %s element indented by two spaces", 3+i, line, name)
			}
		}
	}
	if !strings.HasSuffix(text, "</Message>\r\n</StorageQueueMessage>") && !strings.HasSuffix(text, "  <Message />\r\n</StorageQueueMessage>") {
		t.Errorf("the envelope does not end with the Message element, CRLF and the closing tag:\n%q", text)
	}

	p := parseEnvelope(t, text)
	if p.Root != "StorageQueueMessage" {
		t.Errorf("root element %q", p.Root)
	}
	wantAttrs := map[string]string{
		"xmlns:xsd": "http://www.w3.org/2001/XMLSchema",
		"xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
	}
	if fmt.Sprint(p.Attrs) != fmt.Sprint(wantAttrs) {
		t.Errorf("root attributes %v, want %v", p.Attrs, wantAttrs)
	}
	if strings.Join(p.Names, ",") != strings.Join(envelopeFields, ",") {
		t.Errorf("fields %v, want exactly %v", p.Names, envelopeFields)
	}
	want := map[string]string{
		"ExecutionTag":             at.ID,
		"ClientRequestId":          at.ClientRequestID(),
		"ExpectedExecutionTime":    at.ExpectedText(),
		"SchedulerJobId":           at.Job.Job,
		"SchedulerJobCollectionId": at.Job.Collection,
		"Region":                   region,
		"Message":                  message,
	}
	for name, value := range want {
		if p.Fields[name] != value {
			t.Errorf("%s = %q, want %q", name, p.Fields[name], value)
		}
	}
}

func TestEnvelope(t *testing.T) {
	t.Parallel()

	t.Run("is the original service's document, byte for byte", func(t *testing.T) {
		t.Parallel()
		at := sampleAttempt()
		want := "<?xml version=\"1.0\" encoding=\"utf-16\"?>\r\n" +
			"<StorageQueueMessage xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\r\n" +
			"  <ExecutionTag>53d0bfb54125e2c3fba3040f86b7323c</ExecutionTag>\r\n" +
			"  <ClientRequestId>53d0bfb5-4125-e2c3-fba3-040f86b7323c</ClientRequestId>\r\n" +
			"  <ExpectedExecutionTime>2014-01-30T20:31:13</ExpectedExecutionTime>\r\n" +
			"  <SchedulerJobId>Test</SchedulerJobId>\r\n" +
			"  <SchedulerJobCollectionId>WebJobs-SouthCentralUS</SchedulerJobCollectionId>\r\n" +
			"  <Region>Central US</Region>\r\n" +
			"  <Message>test</Message>\r\n" +
			"</StorageQueueMessage>"
		if got := envelope(at, "Central US", "test"); got != want {
			t.Errorf("envelope =\n%q\nwant\n%q", got, want)
		}
		checkEnvelope(t, want, at, "Central US", "test")
	})

	t.Run("writes the expected time in UTC without an offset", func(t *testing.T) {
		t.Parallel()
		at := sampleAttempt()
		at.Expected = time.Date(2014, 1, 30, 21, 31, 13, 500, time.FixedZone("CET", 3600))
		if got := envelope(at, "Local", "m"); !strings.Contains(got, "<ExpectedExecutionTime>2014-01-30T20:31:13</ExpectedExecutionTime>") {
			t.Errorf("envelope =\n%s", got)
		}
	})

	t.Run("escapes XML's special characters so that the message round-trips", func(t *testing.T) {
		t.Parallel()
		for _, message := range []string{
			`a < b && c > d`,
			`<Message>inner</Message>`,
			`"quoted" and 'apostrophes'`,
			`]]> and <![CDATA[x]]>`,
			`&amp; is already escaped`,
			"lines\r\nwith CRLF\nand LF\rand CR",
			"\ttabbed  and   spaced  ",
			`{"json": ["payload", 1, true]}`,
			"unicode: é ü 日本 🎉",
		} {
			text := envelope(sampleAttempt(), "Local", message)
			checkEnvelope(t, text, sampleAttempt(), "Local", message)
		}
	})

	t.Run("writes the characters as XmlSerializer did", func(t *testing.T) {
		t.Parallel()
		got := envelope(sampleAttempt(), "Local", `a&b<c>d"e'f`+"\r\n")
		if want := "  <Message>a&amp;b&lt;c&gt;d\"e'f&#xD;\n</Message>\r\n"; !strings.Contains(got, want) {
			t.Errorf("envelope =\n%q\nwant it to contain %q", got, want)
		}
	})

	t.Run("writes an empty message as an empty element", func(t *testing.T) {
		t.Parallel()
		text := envelope(sampleAttempt(), "Local", "")
		if !strings.Contains(text, "\r\n  <Message />\r\n</StorageQueueMessage>") {
			t.Errorf("envelope =\n%q", text)
		}
		checkEnvelope(t, text, sampleAttempt(), "Local", "")
	})

	t.Run("escapes the job names and region too", func(t *testing.T) {
		t.Parallel()
		at := sampleAttempt()
		at.Job.Job, at.Job.Collection = "job<1>", "c&c"
		checkEnvelope(t, envelope(at, `West "&" <East>`, "m"), at, `West "&" <East>`, "m")
	})

	t.Run("replaces characters XML cannot carry", func(t *testing.T) {
		t.Parallel()
		for message, want := range map[string]string{
			"bell\x07":            "bell\uFFFD",
			"nul\x00byte":         "nul\uFFFDbyte",
			"bad utf-8 \xff\xfe!": "bad utf-8 \uFFFD\uFFFD!",
			"noncharacter \uFFFE": "noncharacter \uFFFD",
		} {
			checkEnvelope(t, envelope(sampleAttempt(), "Local", message), sampleAttempt(), "Local", want)
		}
	})
}

func FuzzEnvelopeRoundTrip(f *testing.F) {
	for _, seed := range []string{"", "test", "a<b>&c", "\r\n\r", "]]>", "日本", "\x00\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, message string) {
		p, err := readEnvelope(envelope(sampleAttempt(), "Local", message))
		if err != nil {
			t.Fatalf("the envelope of %q does not parse: %v", message, err)
		}
		if strings.Join(p.Names, ",") != strings.Join(envelopeFields, ",") {
			t.Fatalf("fields %v", p.Names)
		}
		if valid(message) && p.Fields["Message"] != message {
			t.Fatalf("message %q came back as %q", message, p.Fields["Message"])
		}
	})
}

// valid reports whether every character of s can be carried by XML.
func valid(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !isXMLChar(r) {
			return false
		}
	}
	return true
}
