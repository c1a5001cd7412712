package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

// Bounds of the free-text fields of a result, in bytes, marker included:
// whatever a target answers, the result event fits in a NATS message and
// the history entry stays readable.
const (
	maxMessageBytes  = 16 << 10
	maxErrorBytes    = 4 << 10
	maxResponseBytes = actions.MaxResponseBytes
)

// truncatedMarker ends a field that was cut.
const truncatedMarker = " …[truncated]"

// headerRoom is what is kept of the largest message NATS accepts for the
// headers of a result's message (its Nats-Msg-Id).
const headerRoom = 1024

// publishAttempts bounds how often publishing a result is tried before the
// execution is handed back.
const publishAttempts = 5

// publishTimeout bounds one attempt at publishing a result.
const publishTimeout = 5 * time.Second

// publish stores the result event on RESULTS, its id the attempt's
// occurrence id, so that a result published twice is stored once. It gives
// up when ctx ends.
func (w *Worker) publish(ctx context.Context, r contracts.Result) error {
	data, err := encodeResult(r, payloadLimit(w.js.Conn()))
	if err != nil {
		return err
	}
	msg := nats.NewMsg(contracts.ResultSubjectPrefix + r.Job.Tokens())
	msg.Data = data
	var errs []error
	for i := range publishAttempts {
		actx, cancel := context.WithTimeout(ctx, publishTimeout)
		_, err := w.js.PublishMsg(actx, msg, jetstream.WithMsgID(r.OccurrenceID))
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if i == publishAttempts-1 {
			break
		}
		t := time.NewTimer(time.Duration(i+1) * 100 * time.Millisecond) // back off before trying again
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	return errors.Join(errs...)
}

// payloadLimit is the size a result event may have on nc: the largest
// message the server accepts, less room for the headers.
func payloadLimit(nc *nats.Conn) int {
	limit := int64(1 << 20) // the server's default max_payload
	if nc != nil && nc.MaxPayload() > 0 {
		limit = nc.MaxPayload()
	}
	return int(max(limit-headerRoom, 0))
}

// encodeResult returns the result event of r, its message, error and
// response cut to their bounds, and then further until the event is at most
// limit bytes: the response first, then the error, then the message, which
// the history shows. A cut field ends with truncatedMarker.
func encodeResult(r contracts.Result, limit int) ([]byte, error) {
	r.Message = clip(r.Message, maxMessageBytes)
	r.Error = clip(r.Error, maxErrorBytes)
	r.Response = clip(r.Response, maxResponseBytes)
	for _, f := range []*string{&r.Response, &r.Error, &r.Message} {
		for {
			data, err := json.Marshal(r.Event())
			if err != nil {
				return nil, fmt.Errorf("encoding the result event: %w", err)
			}
			over := len(data) - limit
			if over <= 0 {
				return data, nil
			}
			if *f == "" {
				break
			}
			// JSON escapes make a byte of text up to six of the event:
			// cut as many bytes as the overflow takes at the field's
			// average. The field gets strictly shorter, so the loop ends.
			encoded, _ := json.Marshal(*f)
			cut := max(over*len(*f)/max(len(encoded)-2, 1), 1)
			*f = clip(*f, len(*f)-cut)
		}
	}
	data, _ := json.Marshal(r.Event())
	return nil, fmt.Errorf("the result event is %d bytes without its message, error and response; NATS accepts %d", len(data), limit)
}

// clip returns s if it is at most n bytes, else its start, cut at a
// character boundary, followed by truncatedMarker, n bytes at most in all
// (empty when n leaves no room for the marker).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - len(truncatedMarker)
	if keep < 0 {
		return ""
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + truncatedMarker
}
