package dev

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A second dev on a data directory in use fails at once, naming the
// directory and the process that holds it; the first goes on working, and
// once it stopped a new one starts on the directory.
func TestOneDevAtATimeOnADataDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop(context.Background())
	testkit.Eventually(t, 10*time.Second, first.Ready, "not ready")

	second, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: quiet})
	if err == nil {
		second.Stop(context.Background())
		t.Fatal("a second dev started on the same data directory")
	}
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("the error %q does not name the directory and the process", err)
	}

	base := "http://" + first.APIAddr() + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	if code, body := testkit.Call(t, "PUT", base, `{"properties": {}}`); code != http.StatusCreated {
		t.Fatalf("the first dev after the second one failed: %d %s", code, body)
	}

	first.Stop(context.Background())
	third, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	defer third.Stop(context.Background())
	testkit.Eventually(t, 10*time.Second, third.Ready, "not ready")
	if code, body := testkit.Call(t, "GET", "http://"+third.APIAddr()+"/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo", ""); code != http.StatusOK {
		t.Fatalf("the collection after the restart: %d %s", code, body)
	}
	if data, err := os.ReadFile(filepath.Join(dir, LockFile)); err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the lock file holds %q (%v), want this process's id", data, err)
	}
}

// Dev's embedded NATS server writes each message to disk before it
// acknowledges it, and says so in its log.
func TestDevSyncsEveryWrite(t *testing.T) {
	t.Parallel()
	var logs testkit.Logs
	env, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop(context.Background())
	ns, ok := env.nats.(*server.Server)
	if !ok {
		t.Fatalf("the embedded NATS server is a %T", env.nats)
	}
	if cfg := ns.JetStreamConfig(); cfg == nil || !cfg.SyncAlways {
		t.Fatalf("JetStream config %+v, want SyncAlways", cfg)
	}
	if !logs.Contains("embedded NATS server started", "sync=\"always") {
		t.Errorf("the log does not say how the store syncs:\n%s", logs.String())
	}
}
