package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/console"
	"github.com/jobscheduler/scheduler/planner/intake"
)

func TestAPlannerRefusesShortTokensAtStart(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Config{
		NATSURL: "nats://127.0.0.1:1", RedisURL: "redis://127.0.0.1:1", EncryptionKey: make([]byte, 32),
		Tokens: []string{secretToken, "hunter2-is-short"},
	})
	if err == nil || !strings.Contains(err.Error(), "--api-tokens (SCHEDULER_API_TOKENS): token 2 of 2") || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error quotes the token: %v", err)
	}
}

func TestTheConsolesOIDCClientNeedsAnIssuer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		client console.OIDCClient
		says   string
	}{
		{console.OIDCClient{ID: "scheduler-console"}, "--oidc-client-id (SCHEDULER_OIDC_CLIENT_ID) needs --oidc-issuer"},
		{console.OIDCClient{Secret: "s3cret-value"}, "--oidc-client-secret-file and --oidc-login-params need --oidc-client-id"},
		{console.OIDCClient{ID: "c", Params: url.Values{"state": {"x"}}}, `--oidc-login-params (SCHEDULER_OIDC_LOGIN_PARAMS): the parameter "state" is set by the sign-in itself`},
	} {
		_, err := Start(context.Background(), Config{
			NATSURL: "nats://127.0.0.1:1", RedisURL: "redis://127.0.0.1:1", EncryptionKey: make([]byte, 32), OIDCClient: tt.client,
		})
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v, want %q", tt.client, err, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
}

// A planner with --intake=false neither answers intake requests nor
// consumes the INTAKE stream; its API serves the scoped tokens of its
// token file.
func TestAPlannerWithoutIntakeConsumesNothing(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	nc, js := testkit.JetStream(t, ns)
	ctx := context.Background()
	if err := intake.EnsureStream(ctx, js, intake.Config{}); err != nil {
		t.Fatal(err)
	}
	job := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}, "recurrence": {"frequency": "Day"}}}`
	if _, err := js.Publish(ctx, contracts.IntakeSubjectPrefix+"s.rg.c.j", []byte(job)); err != nil {
		t.Fatal(err)
	}
	reader := "reader-" + strings.Repeat("r", 32)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	file := fmt.Sprintf("tokens:\n  - {name: ops, sha256: %s, role: operator, scopes: ['*']}\n  - {name: viewer, sha256: %s, role: reader, scopes: [/subscriptions/s]}\n",
		api.HashToken(secretToken), api.HashToken(reader))
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	_, prefix, mr := testkit.Redis(t)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	svc, err := Start(ctx, Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32),
		TokensFile: tokens, DisableIntake: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(ctx)

	if _, err := js.Consumer(ctx, contracts.IntakeStream, intake.Consumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the intake consumer: %v", err)
	}
	info, err := js.Stream(ctx, contracts.IntakeStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("the INTAKE stream holds %d messages, want the 1 published", n)
	}
	if _, err := nc.Request(contracts.RequestSubjectPrefix+"s.rg.c.j", []byte(job), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("an intake request: %v", err)
	}

	base := "http://" + svc.Addr() + "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
	if code, body := testkit.Call(t, "PUT", base, `{"properties": {}}`, "Authorization", "Bearer "+reader); code != http.StatusForbidden {
		t.Fatalf("a reader's PUT: %d %s", code, body)
	}
	if code, body := testkit.Call(t, "PUT", base, `{"properties": {}}`, "Authorization", "Bearer "+secretToken); code != http.StatusCreated {
		t.Fatalf("an operator's PUT: %d %s", code, body)
	}
}
