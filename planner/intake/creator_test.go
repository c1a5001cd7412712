package intake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/store"
)

// accountsConfig is the layout docs/nats.md describes: the planners in an
// account of their own that exports the intake subjects as services, and
// a team's user in another account that imports them (sharing who sent
// each request), allowed to publish definitions for one subscription only.
const accountsConfig = `
listen: "127.0.0.1:-1"
jetstream: {store_dir: %q}
accounts: {
  SCHEDULER: {
    jetstream: enabled
    users: [{user: planner, password: planner-pass}]
    exports: [
      {service: "scheduler.api.jobs.>"}
      {service: "scheduler.intake.jobs.>"}
    ]
  }
  TEAMS: {
    users: [{
      user: team-a, password: team-a-pass
      permissions: {
        publish: {allow: ["scheduler.api.jobs.suba.>", "scheduler.intake.jobs.suba.>"]}
        subscribe: {allow: ["_INBOX.>"]}
      }
    }]
    imports: [
      {service: {account: SCHEDULER, subject: "scheduler.api.jobs.>"}, share: true}
      {service: {account: SCHEDULER, subject: "scheduler.intake.jobs.>"}}
    ]
  }
}
`

// The identity a request carries across accounts is logged with the job
// it created, and the NATS permissions decide which subscriptions a user
// may publish definitions for.
func TestTheCreatorOfAJobFromNATSIsLogged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(accountsConfig, filepath.Join(dir, "js"))), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not become ready")
	}
	ctx := context.Background()

	planner, err := nats.Connect(ns.ClientURL(), nats.UserInfo("planner", "planner-pass"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(planner.Close)
	js, _ := jetstream.New(planner)
	sealer, _ := seal.New(bytes.Repeat([]byte{9}, 32))
	st, err := store.Open(ctx, js, store.Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"suba", "subb"} {
		if _, err := st.PutCollection(ctx, store.Collection{Ref: contracts.CollectionRef{Subscription: sub, ResourceGroup: "rg", Collection: "jc"}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var logs testkit.Logs
	in, err := Start(ctx, planner, js, api.New(st, nil, api.Config{Logger: logs.Logger()}), Config{Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)

	violations := make(chan error, 4)
	team, err := nats.Connect(ns.ClientURL(), nats.UserInfo("team-a", "team-a-pass"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(team.Close)

	t.Run("a request names the account and user that sent it", func(t *testing.T) {
		reply, err := team.Request(contracts.RequestSubjectPrefix+"suba.rg.jc.nightly", []byte(job), 10*time.Second)
		if err != nil || reply.Header.Get(StatusHeader) != "201" {
			t.Fatalf("%v %s", err, reply.Data)
		}
		if !logs.Contains(`msg="job definition applied from NATS"`, "subject="+contracts.RequestSubjectPrefix+"suba.rg.jc.nightly",
			"status=201", "nats_account=TEAMS", "nats_user=team-a") {
			t.Fatalf("the creator is not logged:\n%s", logs.String())
		}
		if !logs.Contains(`msg="job created"`, "principal=nats-intake") {
			t.Fatalf("the API's line is missing:\n%s", logs.String())
		}
	})
	t.Run("a definition published durably names its subject", func(t *testing.T) {
		teamJS, _ := jetstream.New(team)
		if _, err := teamJS.Publish(ctx, contracts.IntakeSubjectPrefix+"suba.rg.jc.durable", []byte(job)); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, func() bool {
			return logs.Contains(`msg="job definition applied from NATS"`, "subject="+contracts.IntakeSubjectPrefix+"suba.rg.jc.durable", "status=201")
		}, "the durable definition was not applied:\n%s", logs.String())
	})
	t.Run("a user cannot publish for a subscription it is not allowed", func(t *testing.T) {
		if err := team.PublishRequest(contracts.RequestSubjectPrefix+"subb.rg.jc.intruder", nats.NewInbox(), []byte(job)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-violations:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "subb") {
				t.Fatalf("error %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not refuse the publish")
		}
		if _, err := st.GetJob(ctx, contracts.JobRef{Subscription: "subb", ResourceGroup: "rg", Collection: "jc", Job: "intruder"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the job of another subscription: %v", err)
		}
	})
}
