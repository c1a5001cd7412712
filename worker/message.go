package worker

import (
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// message is a delivered execution as the worker handles it. A
// jetstream.Msg is one; the pull loop's own deliveries are pulledMsg.
type message interface {
	Data() []byte
	Subject() string
	Headers() nats.Header
	Metadata() (*jetstream.MsgMetadata, error)
	Ack() error
	Nak() error
	NakWithDelay(delay time.Duration) error
	InProgress() error
	TermWithReason(reason string) error
}

// The bodies JetStream reads on a delivery's ack subject.
const (
	ackBody      = "+ACK"
	nakBody      = "-NAK"
	progressBody = "+WPI"
	termBody     = "+TERM"
)

var errNoAckSubject = errors.New("worker: the delivery has no ack subject: it is not a JetStream delivery")

// pulledMsg is a message received on one of the worker's pull requests,
// answered on the connection that received it.
type pulledMsg struct {
	nc  *nats.Conn
	msg *nats.Msg
}

var _ message = pulledMsg{}

func (m pulledMsg) Data() []byte         { return m.msg.Data }
func (m pulledMsg) Subject() string      { return m.msg.Subject }
func (m pulledMsg) Headers() nats.Header { return m.msg.Header }

// Metadata reads the delivery's ack subject: stream and consumer sequence,
// number of deliveries, when the stream stored it.
func (m pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := m.msg.Metadata()
	if err != nil {
		return nil, err
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered,
		NumPending:   md.NumPending,
		Timestamp:    md.Timestamp,
		Stream:       md.Stream,
		Consumer:     md.Consumer,
		Domain:       md.Domain,
	}, nil
}

func (m pulledMsg) Ack() error        { return m.reply(ackBody) }
func (m pulledMsg) Nak() error        { return m.reply(nakBody) }
func (m pulledMsg) InProgress() error { return m.reply(progressBody) }

// NakWithDelay hands the execution back, to be delivered again no sooner
// than delay from now.
func (m pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return m.Nak()
	}
	return m.reply(nakBody + ` {"delay": ` + strconv.FormatInt(delay.Nanoseconds(), 10) + `}`)
}

// TermWithReason ends the execution's deliveries, with reason in the
// consumer's advisory.
func (m pulledMsg) TermWithReason(reason string) error {
	return m.reply(termBody + " " + reason)
}

func (m pulledMsg) reply(body string) error {
	if m.msg.Reply == "" {
		return errNoAckSubject
	}
	return m.nc.Publish(m.msg.Reply, []byte(body))
}
