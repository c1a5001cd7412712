package storagequeue

import (
	"strings"
	"unicode/utf8"

	"github.com/jobscheduler/scheduler/actions"
)

// envelope returns the text put on the queue for one attempt: the job's
// message wrapped in the StorageQueueMessage document the original service
// wrote with .NET's XmlSerializer, byte for byte in its layout. That means
// the declaration says encoding="utf-16" (the serializer wrote to a .NET
// string, whose encoding is UTF-16) although the text travels as UTF-8 in
// the REST body, lines end in CRLF, elements are indented by two spaces,
// and there is no line break after the closing tag. Consumers written for
// the original service parse it unchanged; a Go consumer needs a
// CharsetReader that accepts "utf-16" for text already decoded.
func envelope(at actions.Attempt, region, message string) string {
	var b strings.Builder
	b.Grow(512 + len(message))
	b.WriteString(`<?xml version="1.0" encoding="utf-16"?>` + "\r\n")
	b.WriteString(`<StorageQueueMessage xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` + "\r\n")
	element(&b, "ExecutionTag", at.ID)
	element(&b, "ClientRequestId", at.ClientRequestID())
	element(&b, "ExpectedExecutionTime", at.ExpectedText())
	element(&b, "SchedulerJobId", at.Job.Job)
	element(&b, "SchedulerJobCollectionId", at.Job.Collection)
	element(&b, "Region", region)
	element(&b, "Message", message)
	b.WriteString("</StorageQueueMessage>")
	return b.String()
}

// element writes one indented child element and its line break. An empty
// value is written as an empty element, "<Name />", as XmlSerializer wrote
// an empty string.
func element(b *strings.Builder, name, value string) {
	b.WriteString("  <")
	b.WriteString(name)
	if value == "" {
		b.WriteString(" />\r\n")
		return
	}
	b.WriteByte('>')
	escapeText(b, value)
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">\r\n")
}

// escapeText writes s as XML character data that a parser reads back as s.
// It escapes '&', '<' and '>' as XmlSerializer did, leaving quotes as they
// are. It also writes '\r' as a character reference, because a parser
// turns a literal CR or CRLF into LF and the job's message would not come
// back as sent. Characters XML 1.0 cannot carry at all (control characters
// other than tab, LF and CR, U+FFFE, U+FFFF, and invalid UTF-8) become
// U+FFFD, since not even a character reference can carry them and the
// message must still reach the queue as a well-formed document.
func escapeText(b *strings.Builder, s string) {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == '&':
			esc = "&amp;"
		case r == '<':
			esc = "&lt;"
		case r == '>':
			esc = "&gt;"
		case r == '\r':
			esc = "&#xD;"
		case r == utf8.RuneError && width == 1, !isXMLChar(r):
			esc = "\uFFFD"
		default:
			i += width
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(esc)
		i += width
		last = i
	}
	b.WriteString(s[last:])
}

// isXMLChar reports whether r is in XML 1.0's Char production.
func isXMLChar(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
