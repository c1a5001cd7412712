// Package intake takes job definitions from NATS and applies them exactly as
// the REST API's PUT does: as requests answered with the stored job or the
// ARM error body, and as messages on the durable INTAKE stream, applied even
// when no planner was running when they were published.
package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// Applier serves one API request inside the process (api.Server.Apply).
type Applier interface {
	Apply(ctx context.Context, method, path string, body []byte) (int, []byte)
}

// StatusHeader carries the HTTP status of the answer to a request.
const StatusHeader = "Scheduler-Status"

// Consumer is the durable consumer on the INTAKE stream that planners share.
const Consumer = "planner-intake"

// queueGroup spreads requests over the running planners.
const queueGroup = "planners"

// Config configures the intake.
type Config struct {
	// Replicas of the INTAKE stream. Defaults to 1.
	Replicas int
	// MaxAge is how long an unapplied definition stays on the stream.
	// Defaults to 7 days.
	MaxAge time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Rejection is the event published on scheduler.intake.rejected.<sub>.<rg>.
// <collection>.<job> for a stream message that could not be applied.
type Rejection struct {
	Subject    string          `json:"subject"`
	Status     int             `json:"status"`
	Error      json.RawMessage `json:"error"` // the ARM error body
	ReceivedAt time.Time       `json:"receivedAt"`
}

// Intake is the running NATS intake of one planner.
type Intake struct {
	nc      *nats.Conn
	api     Applier
	cfg     Config
	sub     *nats.Subscription
	consume jetstream.ConsumeContext
}

// EnsureStream creates or updates the INTAKE stream, waiting for a cluster
// that is not answering yet (see streams.Retry).
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	err := streams.Retry(ctx, "the "+contracts.IntakeStream+" stream", func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:      contracts.IntakeStream,
			Subjects:  []string{contracts.IntakeSubjectPrefix + ">"},
			Retention: jetstream.WorkQueuePolicy,
			Storage:   jetstream.FileStorage,
			Replicas:  max(cfg.Replicas, 1),
			MaxAge:    max(cfg.MaxAge, 0),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating the %s stream: %w", contracts.IntakeStream, err)
	}
	return nil
}

// Start subscribes to the request subjects and consumes the INTAKE stream.
func Start(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, api Applier, cfg Config) (*Intake, error) {
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := EnsureStream(ctx, js, cfg); err != nil {
		return nil, err
	}
	in := &Intake{nc: nc, api: api, cfg: cfg}
	var err error
	in.sub, err = nc.QueueSubscribe(contracts.RequestSubjectPrefix+">", queueGroup, in.onRequest)
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", contracts.RequestSubjectPrefix+">", err)
	}
	cons, err := streams.Open(ctx, "the "+Consumer+" consumer of "+contracts.IntakeStream, func(ctx context.Context) (jetstream.Consumer, error) {
		return js.CreateOrUpdateConsumer(ctx, contracts.IntakeStream, jetstream.ConsumerConfig{
			Durable: Consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 10,
		})
	})
	if err != nil {
		in.Stop()
		return nil, fmt.Errorf("creating the %s consumer: %w", Consumer, err)
	}
	in.consume, err = cons.Consume(in.onMessage)
	if err != nil {
		in.Stop()
		return nil, fmt.Errorf("consuming %s: %w", contracts.IntakeStream, err)
	}
	return in, nil
}

// Stop stops taking definitions. It is idempotent.
func (in *Intake) Stop() {
	if in.sub != nil {
		_ = in.sub.Drain()
	}
	if in.consume != nil {
		in.consume.Stop()
	}
}

// apply PUTs the definition at the job named by the subject's tokens,
// and logs who published a definition applied (see creator).
func (in *Intake) apply(ctx context.Context, subject, prefix string, header nats.Header, body []byte) (int, []byte) {
	path, err := jobPath(strings.TrimPrefix(subject, prefix))
	if err != nil {
		data, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "BadRequest", "message": err.Error()}})
		return 400, data
	}
	status, answer := in.api.Apply(ctx, "PUT", path, body)
	if status < 300 {
		in.cfg.Logger.Info("job definition applied from NATS",
			append([]any{slog.String("subject", contracts.Abbreviate(subject)), slog.Int("status", status)}, creator(header)...)...)
	}
	return status, answer
}

// creator returns what a message tells of who published it: the account
// and user of the Nats-Request-Info header, which the NATS server sets on
// a request that crossed into the planners' account through a service
// import (the user only when the import shares it). Within one account a
// client can write that header itself, and the server removes it from
// messages it stores in a stream: who may publish definitions is decided
// by the server's permissions (docs/nats.md), not by this.
func creator(header nats.Header) []any {
	var info struct {
		Account string `json:"acc"`
		User    string `json:"user"`
	}
	raw := header.Get("Nats-Request-Info")
	if raw == "" || json.Unmarshal([]byte(raw), &info) != nil {
		return nil
	}
	var attrs []any
	if info.Account != "" {
		attrs = append(attrs, slog.String("nats_account", contracts.Abbreviate(info.Account)))
	}
	if info.User != "" {
		attrs = append(attrs, slog.String("nats_user", contracts.Abbreviate(info.User)))
	}
	return attrs
}

func (in *Intake) onRequest(m *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, body := in.apply(ctx, m.Subject, contracts.RequestSubjectPrefix, m.Header, m.Data)
	if m.Reply == "" {
		return
	}
	reply := nats.NewMsg(m.Reply)
	reply.Header.Set(StatusHeader, strconv.Itoa(status))
	reply.Data = body
	if err := m.RespondMsg(reply); err != nil {
		in.cfg.Logger.Warn("answering an intake request", slog.String("subject", contracts.Abbreviate(m.Subject)), slog.String("error", err.Error()))
	}
}

func (in *Intake) onMessage(m jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, body := in.apply(ctx, m.Subject(), contracts.IntakeSubjectPrefix, m.Headers(), m.Data())
	switch {
	case status >= 500:
		// The store or the planner is unavailable: try again later.
		_ = m.NakWithDelay(5 * time.Second)
		return
	case status >= 400:
		in.reject(m.Subject(), status, body)
	}
	if err := m.Ack(); err != nil {
		in.cfg.Logger.Warn("acknowledging an intake message", slog.String("subject", contracts.Abbreviate(m.Subject())), slog.String("error", err.Error()))
	}
}

// reject publishes the rejection event of a stream message on the
// rejected subject of its tokens. Tokens longer than those of the longest
// valid names are not published: they name no job, and with the longer
// prefix the subject could pass the length of a protocol line NATS
// accepts, which would close the planner's connection.
func (in *Intake) reject(subject string, status int, body []byte) {
	tokens := strings.TrimPrefix(subject, contracts.IntakeSubjectPrefix)
	shown := contracts.Abbreviate(subject)
	if len(tokens) > contracts.MaxJobTokensLength {
		in.cfg.Logger.Warn("rejected a job definition whose subject is too long to name a job; no rejection event",
			slog.String("subject", shown), slog.Int("subject_bytes", len(subject)), slog.Int("status", status))
		return
	}
	event, _ := json.Marshal(Rejection{Subject: subject, Status: status, Error: json.RawMessage(errorOf(body)), ReceivedAt: time.Now().UTC()})
	if err := in.nc.Publish(contracts.RejectedSubjectPrefix+tokens, event); err != nil {
		in.cfg.Logger.Warn("publishing a rejection", slog.String("subject", shown), slog.String("error", err.Error()))
	}
	in.cfg.Logger.Info("rejected a job definition", slog.String("subject", shown), slog.Int("status", status))
}

// errorOf returns the "error" object of an ARM error body.
func errorOf(body []byte) []byte {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		return e.Error
	}
	return []byte("null")
}

// jobPath turns "<sub>.<rg>.<collection>.<job>" into the job's API path.
func jobPath(tokens string) (string, error) {
	parts := strings.Split(tokens, ".")
	if len(parts) != 4 {
		return "", errors.New("the subject must end with <subscription>.<resourceGroup>.<collection>.<job>")
	}
	names := make([]string, 4)
	for i, p := range parts {
		name, err := contracts.ParseToken(p)
		if err != nil {
			return "", err
		}
		names[i] = url.PathEscape(name)
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Scheduler/jobCollections/%s/jobs/%s",
		names[0], names[1], names[2], names[3]), nil
}
