package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/service"
)

// The deploy check reads every file under deploy/ and compares what it
// says about the scheduler with the binary itself: the cobra commands and
// their flags, the environment variables named in the flags' help, the
// --listen port each role ends up with, the JetStream names in contracts.
// A file of a kind it does not know is a problem, so that a new file gets
// a check before it gets in.

// deployDir and repoDir are the deploy folder and the repository root,
// seen from this package.
const (
	deployDir = "../../deploy"
	repoDir   = "../.."
)

// Every file in deploy/ matches the binary.
func TestTheDeployFilesMatchTheBinary(t *testing.T) {
	t.Parallel()
	r := checkDeploy(deployDir, repoDir)
	for _, p := range r.problems {
		t.Error(p)
	}
	// The check looked at what it is there for: each role in compose and
	// in Kubernetes, the KEDA trigger, more than one view of the NATS
	// monitoring port, the commands in the README.
	for _, set := range []string{"compose/compose.yaml", "kubernetes"} {
		for _, role := range []string{"planner", "worker", "history"} {
			if !slices.ContainsFunc(r.runs, func(run *roleRun) bool { return run.set == set && run.role == role }) {
				t.Errorf("%s runs no %s that the check saw", set, role)
			}
		}
	}
	if r.scaledObjects == 0 {
		t.Error("the check saw no KEDA ScaledObject")
	}
	if len(r.natsMonitor) < 3 {
		t.Errorf("the check saw the NATS monitoring port only in %v", slices.Sorted(maps.Keys(r.natsMonitor)))
	}
	if r.natsSync < 2 {
		t.Errorf("the check read the sync_interval of %d NATS configurations, want compose's and the Helm chart's", r.natsSync)
	}
	if r.healthchecks < 3 {
		t.Errorf("the check saw %d health checks that run the binary, want one per compose role", r.healthchecks)
	}
	if r.docCommands == 0 {
		t.Error("the check saw no scheduler command in the Markdown files")
	}
}

// The check reports each kind of mistake it is there to catch.
func TestTheDeployCheckFindsMistakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", `FROM golang:1.26 AS build
RUN go build -o /out/scheduler ./cmd/scheduler
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scheduler /scheduler
USER nonroot
ENTRYPOINT ["/scheduler"]
EXPOSE 9090
SHELL ["/bin/sh", "-c"]
CMD ["serve", "planer"]
`)
	write("compose/compose.yaml", `
services:
  nats:
    image: nats:2.14-alpine
    command: ["--config", "/etc/nats.conf", "--jetstream", "--http_port", "8222"]
    volumes: ["./nats.conf:/etc/nats.conf:ro"]
    healthcheck: {test: ["CMD", "wget", "-q", "http://127.0.0.1:8222/healthz"]}
  redis:
    image: redis:7.4
    command: ["redis-server"]
    healthcheck: {test: ["CMD", "redis-cli", "ping"]}
  planner:
    build: {context: ../.., dockerfile: Dockerfile}
    image: scheduler:local
    command: ["serve", "planner"]
    environment: {SCHEDULER_LISTEN: "0.0.0.0:8080", SCHEDULER_REPLICAS: "3", SCHEDULER_ACTION_TIMEOUT: 2m}
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "http://127.0.0.1:8080/readyz"]}
  worker:
    image: scheduler:local
    command: ["serve", "worker", "--concurency", "8"]
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "http://127.0.0.1:8081/readyz"]}
  worker2:
    image: scheduler:local
    command: ["serve", "worker"]
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "--timout", "3s", "http://127.0.0.1:8081/readyz"]}
  history:
    image: scheduler:local
    command: ["serve", "history"]
    environment:
      SCHEDULER_LISTEN: 0.0.0.0:8082
      SCHEDULER_REDIS_URL: redis://redis:6379
      SCHEDULER_NATS_URL: nats://redis:6379
    ports: ["8080"]
    depends_on: [nats, postgres]
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "--timeout", "3s", "http://127.0.0.1:9999/readyz"]}
  mailer:
    image: mailhog/mailhog
    healthcheck: {test: ["CMD", "true"]}
`)
	write("compose/.env.example", "SCHEDULER_ENCRYPTION_KEY=c2VjcmV0\n")
	write("compose/nats.conf", "jetstream {\n  sync_interval: \"1m\"\n}\n")
	write("compose/unused.conf", "jetstream {\n  sync_interval: always\n}\n")
	write("helm/nats-values.yaml", `config:
  cluster: {enabled: false, replicas: 1}
  jetstream: {enabled: true, fileStore: {pvc: {enabled: false}}, merge: {sync_interval: 2m}}
  monitor: {port: 8223}
`)
	write("k8s/kustomization.yaml", `kind: Kustomization
resources: [keda.yaml, worker.yaml, secret.yaml, missing.yaml]
images: [{name: scheduler}]
`)
	write("k8s/worker.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: scheduler-worker}
spec:
  template:
    metadata: {labels: {app: worker}, annotations: {prometheus.io/port: "9100"}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: worker
          image: scheduler
          args: ["serve", "worker", "--drain-timeout", "60s"]
          env:
            - {name: SCHEDULER_LISTEN, value: "0.0.0.0:8081"}
            - {name: SCHEDULER_REDIS_URL, value: "redis://redis:6379"}
            - name: SCHEDULER_API_TOKENS
              valueFrom: {secretKeyRef: {name: scheduler-secrets, key: api-token}}
          ports: [{name: http, containerPort: 8081}]
          startupProbe: {httpGet: {path: /healthz, port: http}}
          livenessProbe: {httpGet: {path: /readyz, port: http}}
          readinessProbe: {httpGet: {path: /readyz, port: 8080}}
---
apiVersion: v1
kind: Service
metadata: {name: scheduler-api}
spec:
  selector: {app: worker}
  ports: [{port: 80, targetPort: 9090}]
`)
	write("k8s/secret.yaml", `apiVersion: v1
kind: Secret
metadata: {name: scheduler-secrets}
stringData: {api-tokens: "hunter2"}
`)
	write("k8s/keda.yaml", `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: scheduler-worker}
spec:
  scaleTargetRef: {name: nowhere}
  triggers:
    - type: nats-jetstream
      metadata:
        natsServerMonitoringEndPoint: "nats:4222"
        account: $G
        stream: EXECS
        consumer: worker
        lagThreshold: "10"
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: scheduler-worker-2}
spec:
  scaleTargetRef: {name: scheduler-worker}
  triggers:
    - type: nats-jetstream
      metadata: {natsServerMonitoringEndpoint: "nats:4222", account: $G, stream: EXEC, consumer: workers, lagThreshold: "500"}
`)
	write("k8s/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n")
	write("README.md", "Run `scheduler serve worker --concurency 4`, or:\n\n```sh\ngo run ./cmd/scheduler serve planner --listen :8080 --redis-ur redis://x\n```\n\nSee [the guide](nowhere.md); set `SCHEDULER_WORKERS`.\n")
	write("notes.txt", "hello")

	got := strings.Join(checkDeploy(dir, "").problems, "\n")
	for _, want := range []string{
		// Dockerfile
		`Dockerfile: USER nonroot is not numeric`,
		`Dockerfile: EXPOSE 9090 is no role's default --listen port`,
		`Dockerfile: the check does not know the instruction SHELL`,
		// compose: commands, flags, variables, ports
		`Dockerfile: CMD: "serve planer" is not a command of the scheduler`,
		`service worker: scheduler serve worker: unknown flag: --concurency`,
		`service history: scheduler serve history does not read SCHEDULER_REDIS_URL`,
		`service history: SCHEDULER_NATS_URL names the service redis, which is not NATS`,
		`service history: the health check asks port 9999; the role listens on 8082`,
		`service worker2: the health check: scheduler healthcheck: unknown flag: --timout`,
		`service worker2: stop_grace_period is 10s; a worker stopping takes up to 35s`,
		`service history: publishes container port 8080; the role listens on 8082`,
		`service history: depends on postgres, which is not a service`,
		`service worker2: listens on 127.0.0.1:8081 (the default`,
		`service nats: JetStream stores in /tmp`,
		`service nats: JetStream acknowledges writes before they reach the disk (it syncs every 1m0s)`,
		`compose/unused.conf: no NATS service of a compose file runs with it`,
		`service redis: runs without AOF`,
		`service mailer: the check does not know the image mailhog/mailhog`,
		`service planner: build.dockerfile`,
		`.env.example: SCHEDULER_ENCRYPTION_KEY has a value`,
		`.env.example: SCHEDULER_ENCRYPTION_KEY is not used by`,
		`compose: .env.example asks for .env, which no .gitignore in compose/ ignores`,
		// Kubernetes
		`container worker: scheduler serve worker does not read SCHEDULER_REDIS_URL`,
		`container worker: scheduler serve worker does not read SCHEDULER_API_TOKENS`,
		`secret scheduler-secrets has no key api-token`,
		`container worker: the livenessProbe asks /readyz, want /healthz`,
		`container worker: the startupProbe gives the role 30s to start`,
		`container worker: the readinessProbe asks port 8080; the role listens on 8081`,
		`terminationGracePeriodSeconds is 30; a worker stopping takes up to 1m5s`,
		`runAsNonRoot needs a numeric USER in the Dockerfile`,
		`Service scheduler-api: port 80 targets 9090; the role listens on 8081`,
		`Secret scheduler-secrets: api-tokens holds a value`,
		`ScaledObject scheduler-worker: scales "nowhere", which is not a Deployment of a worker`,
		`unknown metadata natsServerMonitoringEndPoint`,
		`stream is "EXECS", want "EXEC"`,
		`consumer is "worker", want "workers"`,
		`lagThreshold 500 is above the workers' --concurrency`,
		`k8s/kustomization.yaml: lists missing.yaml, which does not exist`,
		`k8s/extra.yaml is not listed in k8s/kustomization.yaml`,
		`k8s: no container loads the ConfigMap extra`,
		`prometheus.io/port is 9100; /metrics is on the role's --listen port 8081`,
		`service planner: runs 1 planner; run two for availability`,
		// the NATS Helm chart's values
		`helm/nats-values.yaml: config.cluster.enabled is not true`,
		`helm/nats-values.yaml: config.cluster.replicas is 1`,
		`helm/nats-values.yaml: JetStream does not keep its file store on a persistent volume`,
		`helm/nats-values.yaml: JetStream acknowledges writes before they reach the disk (sync_interval "2m")`,
		// across files
		`compose/compose.yaml: the roles disagree on --replicas`,
		`compose/compose.yaml: the workers' --ack-wait 1m30s is not above the planners' --action-timeout 2m0s`,
		`the NATS monitoring port differs`,
		// Markdown
		"README.md: `scheduler serve worker --concurency 4`: scheduler serve worker: unknown flag: --concurency",
		`README.md: go run ./cmd/scheduler serve planner --listen :8080 --redis-ur redis://x: scheduler serve planner: unknown flag: --redis-ur`,
		`README.md: the link nowhere.md leads nowhere`,
		`README.md: no command of the scheduler reads SCHEDULER_WORKERS`,
		// coverage
		`notes.txt: the deploy check does not know this kind of file`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the check does not report %q", want)
		}
	}
	if t.Failed() {
		t.Logf("it reports:\n%s", got)
	}
}

// deployReport is what checkDeploy found: the problems, and what it
// looked at.
type deployReport struct {
	problems      []string
	runs          []*roleRun
	natsMonitor   map[string]int // where the NATS monitoring port is named → the port
	scaledObjects int
	natsSync      int             // NATS configurations whose sync_interval the check read
	natsConfs     map[string]bool // NATS configuration files (from the deploy folder) a compose service mounts
	healthchecks  int             // container health checks that run the binary
	docCommands   int             // scheduler commands checked in Markdown files
}

func (r *deployReport) bad(where, format string, a ...any) {
	r.problems = append(r.problems, where+": "+fmt.Sprintf(format, a...))
}

// roleRun is one run of `scheduler serve ROLE` a deploy file describes,
// with its flags set as the binary would set them from the command line
// and the environment.
type roleRun struct {
	set   string // the deployment it belongs to: a compose file, a kustomize folder
	where string
	role  string // planner, worker or history
	cmd   *cobra.Command
}

// flag returns the value the run's flag ends up with.
func (r *roleRun) flag(name string) string {
	if f := r.cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func (r *roleRun) duration(name string) time.Duration {
	d, _ := time.ParseDuration(r.flag(name))
	return d
}

func (r *roleRun) int(name string) int {
	n, _ := strconv.Atoi(r.flag(name))
	return n
}

// listenPort returns the port of the run's --listen address.
func (r *roleRun) listenPort() int { return r.port("listen") }

// metricsPort returns the port /metrics is served on: --metrics-listen's,
// or else --listen's.
func (r *roleRun) metricsPort() int {
	if r.flag("metrics-listen") != "" {
		return r.port("metrics-listen")
	}
	return r.listenPort()
}

// port returns the port of the address in the flag name.
func (r *roleRun) port(name string) int {
	_, p, err := net.SplitHostPort(r.flag(name))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return -1
	}
	return n
}

// Variables named in the flags' help: "(env NAME)" is the flag's own
// fallback (bindEnv); any other SCHEDULER_* name the help gives is read
// directly (the encryption key itself, beside --encryption-key-file).
var (
	flagEnvRE   = regexp.MustCompile(`\(env (SCHEDULER_[A-Z0-9_]+)\)`)
	schedEnvRE  = regexp.MustCompile(`SCHEDULER_[A-Z0-9_]+`)
	interpolRE  = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
	inlineRE    = regexp.MustCompile("`([^`\n]+)`")
	linkRE      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	flagTokenRE = regexp.MustCompile(`^--([a-z][a-z0-9-]*)`)
)

// commandEnv returns the SCHEDULER_* variables cmd reads, each with the
// flag it sets ("" for a variable the command reads itself).
func commandEnv(cmd *cobra.Command) map[string]string {
	out := map[string]string{}
	visit := func(f *pflag.Flag) {
		for _, name := range schedEnvRE.FindAllString(f.Usage, -1) {
			if _, ok := out[name]; !ok {
				out[name] = ""
			}
		}
		if m := flagEnvRE.FindStringSubmatch(f.Usage); m != nil {
			out[m[1]] = f.Name
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return out
}

// allCommands returns every command of the binary.
func allCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	return out
}

// checkCommand parses args as the binary would: a runnable subcommand,
// only its flags, the positional arguments it takes, and env as the
// environment (a nil value is one the deploy file does not spell out: a
// secret, an interpolation). It returns the command with its flags set,
// or nil after reporting why args are not a command of the scheduler.
func (r *deployReport) checkCommand(where string, args []string, env map[string]*string) *cobra.Command {
	cmd, rest, err := newRootCommand().Find(args)
	if err != nil || !cmd.HasParent() || !cmd.Runnable() {
		r.bad(where, "%q is not a command of the scheduler", strings.Join(args, " "))
		return nil
	}
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.Flags().SetOutput(io.Discard)
	path := cmd.CommandPath()
	if err := cmd.ParseFlags(rest); err != nil {
		r.bad(where, "%s: %v", path, err)
		return nil
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		r.bad(where, "%s: %v", path, err)
	}
	known := commandEnv(cmd)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !strings.HasPrefix(name, "SCHEDULER_") {
			continue
		}
		flagName, ok := known[name]
		if !ok {
			r.bad(where, "%s does not read %s", path, name)
			continue
		}
		f := cmd.Flags().Lookup(flagName)
		if v := env[name]; f != nil && !f.Changed && v != nil {
			if err := f.Value.Set(*v); err != nil {
				r.bad(where, "%s=%q: %v", name, *v, err)
			}
		}
	}
	return cmd
}

// serveRole records a run of a serve role and checks what every run must
// have: an address beyond loopback, for probes and other containers.
func (r *deployReport) serveRole(set, where string, cmd *cobra.Command) *roleRun {
	parent := cmd.Parent()
	if parent == nil || parent.Name() != "serve" {
		r.bad(where, "runs %q, not one of the roles under serve", cmd.CommandPath())
		return nil
	}
	run := &roleRun{set: set, where: where, role: cmd.Name(), cmd: cmd}
	listen := run.flag("listen")
	if run.listenPort() <= 0 {
		r.bad(where, "listens on %q, which has no port", listen)
		return nil
	}
	if service.Loopback(listen) {
		how := "--listen or SCHEDULER_LISTEN"
		if !cmd.Flags().Changed("listen") && listen == cmd.Flags().Lookup("listen").DefValue {
			how = "the default; set " + how
		}
		r.bad(where, "listens on %s (%s): probes and other containers cannot reach loopback", listen, how)
	}
	r.runs = append(r.runs, run)
	return run
}

// checkAgreement checks what the roles of one deployment must agree on.
func (r *deployReport) checkAgreement() {
	sets := map[string][]*roleRun{}
	for _, run := range r.runs {
		sets[run.set] = append(sets[run.set], run)
	}
	for _, set := range slices.Sorted(maps.Keys(sets)) {
		runs := sets[set]
		for _, name := range []string{"replicas"} {
			values := map[string][]string{}
			for _, run := range runs {
				values[run.flag(name)] = append(values[run.flag(name)], run.role)
			}
			if len(values) > 1 {
				r.bad(set, "the roles disagree on --%s: %v", name, values)
			}
		}
		for _, name := range []string{"partitions", "redis-prefix", "lease"} {
			values := map[string]bool{}
			for _, run := range runs {
				if run.role == "planner" {
					values[run.flag(name)] = true
				}
			}
			if len(values) > 1 {
				r.bad(set, "the planners disagree on --%s: %v", name, slices.Sorted(maps.Keys(values)))
			}
		}
		for _, p := range runs {
			for _, w := range runs {
				if p.role == "planner" && w.role == "worker" && w.duration("ack-wait") <= p.duration("action-timeout") {
					r.bad(set, "the workers' --ack-wait %s is not above the planners' --action-timeout %s", w.flag("ack-wait"), p.flag("action-timeout"))
				}
			}
		}
	}
}

// workerGrace is how long a stopping worker may take: runRole waits for
// the drain timeout and 5s more.
func workerGrace(run *roleRun) time.Duration { return run.duration("drain-timeout") + 5*time.Second }

// deployFile is one file under the deploy folder.
type deployFile struct {
	rel  string // slash-separated, from the deploy folder
	data []byte
}

// checkDeploy checks every file under dir. repo is the repository root
// the Dockerfile builds from ("" to skip what needs it).
func checkDeploy(dir, repo string) *deployReport {
	r := &deployReport{natsMonitor: map[string]int{}, natsConfs: map[string]bool{}}
	var files []deployFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, deployFile{filepath.ToSlash(rel), data})
		return err
	})
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil
	}
	var (
		dockerfiles = map[string]*dockerImage{}
		compose     []deployFile
		dotenvs     []deployFile
		gitignores  = map[string][]string{} // folder → patterns
		ignores     []deployFile
		markdown    []deployFile
		natsConfs   []deployFile
		kube        = map[string]*kubeFolder{}
	)
	for _, f := range files {
		base := path.Base(f.rel)
		switch {
		case base == "Dockerfile" || strings.HasSuffix(base, ".Dockerfile"):
			dockerfiles[f.rel] = r.checkDockerfile(f)
		case strings.HasSuffix(base, ".dockerignore"):
			ignores = append(ignores, f)
		case base == ".gitignore":
			gitignores[path.Dir(f.rel)] = ignorePatterns(f.data)
		case base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env"):
			dotenvs = append(dotenvs, f)
		case strings.HasSuffix(base, ".md"):
			markdown = append(markdown, f)
		case strings.HasSuffix(base, ".conf"):
			natsConfs = append(natsConfs, f)
		case strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"):
			docs, err := yamlDocuments(f.data)
			if err != nil {
				r.bad(f.rel, "%v", err)
				continue
			}
			switch {
			case len(docs) == 1 && docs[0]["services"] != nil:
				compose = append(compose, f)
			case len(docs) == 1 && ymap(docs[0]["config"])["jetstream"] != nil:
				r.checkNATSHelmValues(f, docs[0])
			case len(docs) > 0 && docs[0]["kind"] != nil:
				folder := path.Dir(f.rel)
				if kube[folder] == nil {
					kube[folder] = &kubeFolder{dir: folder}
				}
				kube[folder].add(r, f.rel, docs)
			default:
				r.bad(f.rel, "neither a compose file nor Kubernetes manifests")
			}
		default:
			r.bad(f.rel, "the deploy check does not know this kind of file; teach cmd/scheduler/deploy_test.go to check it")
		}
	}
	for _, f := range ignores {
		r.checkDockerignore(f, exists, repo)
	}
	composeVars := map[string]map[string]bool{} // folder → variables the compose files interpolate
	for _, f := range compose {
		folder := path.Dir(f.rel)
		if composeVars[folder] == nil {
			composeVars[folder] = map[string]bool{}
		}
		r.checkCompose(f, dir, dockerfiles, composeVars[folder])
	}
	for _, f := range dotenvs {
		r.checkDotenv(f, composeVars[path.Dir(f.rel)], gitignores)
	}
	for _, f := range natsConfs {
		if !r.natsConfs[f.rel] {
			r.bad(f.rel, "no NATS service of a compose file runs with it (--config)")
		}
	}
	for folder, patterns := range gitignores {
		for _, f := range files {
			// .env is the filled-in copy of .env.example, ignored on purpose.
			base := path.Base(f.rel)
			if path.Dir(f.rel) == folder && base != ".gitignore" && base != ".env" && ignored(patterns, base) {
				r.bad(folder+"/.gitignore", "ignores %s, a file of the deployment", f.rel)
			}
		}
	}
	var image *dockerImage
	if len(dockerfiles) == 1 {
		for _, img := range dockerfiles {
			image = img
		}
	}
	for _, folder := range slices.Sorted(maps.Keys(kube)) {
		kube[folder].check(r, exists, image)
	}
	for _, f := range markdown {
		r.checkMarkdown(f, exists)
	}
	r.checkAgreement()
	ports := map[int][]string{}
	for where, p := range r.natsMonitor {
		ports[p] = append(ports[p], where)
	}
	if len(ports) > 1 {
		r.problems = append(r.problems, fmt.Sprintf("the NATS monitoring port differs between files: %v", ports))
	}
	return r
}

// yamlDocuments decodes every document of a YAML stream.
func yamlDocuments(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// Accessors for decoded YAML.

func ymap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func ylist(v any) []any         { l, _ := v.([]any); return l }

func ystr(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func ystrs(v any) []string {
	if s, ok := v.(string); ok {
		return strings.Fields(s)
	}
	var out []string
	for _, x := range ylist(v) {
		out = append(out, ystr(x))
	}
	return out
}

func yint(v any) (int, bool) {
	n, err := strconv.Atoi(ystr(v))
	return n, err == nil
}

// dockerImage is what the Dockerfile says about the image.
type dockerImage struct {
	file        string
	entrypoint  string // the binary ENTRYPOINT runs
	numericUser bool
	stages      map[string]bool
}

// checkDockerfile checks that the image builds ./cmd/scheduler, copies the
// binary into its last stage and runs it, and that the rest of what it
// says is the binary's.
func (r *deployReport) checkDockerfile(f deployFile) *dockerImage {
	img := &dockerImage{file: f.rel, stages: map[string]bool{}}
	var (
		lines   []string
		pending string
	)
	sc := bufio.NewScanner(bytes.NewReader(f.data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		lines = append(lines, pending+line)
		pending = ""
	}
	type stage struct {
		name   string
		built  string            // what `go build -o` writes, when it builds ./cmd/scheduler
		copies map[string]string // destination → "stage:source"
		user   string
	}
	var stages []*stage
	defaultPorts := map[string]bool{}
	for _, c := range allCommands() {
		if c.Parent() != nil && c.Parent().Name() == "serve" {
			if _, p, err := net.SplitHostPort(c.Flags().Lookup("listen").DefValue); err == nil {
				defaultPorts[p] = true
			}
		}
	}
	var entrypoint []string
	for _, line := range lines {
		instr, rest, _ := strings.Cut(line, " ")
		instr, rest = strings.ToUpper(instr), strings.TrimSpace(rest)
		var cur *stage
		if len(stages) > 0 {
			cur = stages[len(stages)-1]
		}
		if cur == nil && instr != "FROM" && instr != "ARG" {
			r.bad(f.rel, "%s before FROM", instr)
			continue
		}
		switch instr {
		case "FROM":
			words := strings.Fields(rest)
			s := &stage{copies: map[string]string{}}
			if n := len(words); n >= 3 && strings.EqualFold(words[n-2], "AS") {
				s.name = words[n-1]
				img.stages[s.name] = true
			}
			stages = append(stages, s)
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/scheduler") {
				words := strings.Fields(rest)
				for i, w := range words {
					if w == "-o" && i+1 < len(words) {
						cur.built = words[i+1]
					}
				}
			}
		case "COPY":
			words := strings.Fields(rest)
			from := ""
			var paths []string
			for _, w := range words {
				if v, ok := strings.CutPrefix(w, "--from="); ok {
					from = v
				} else if !strings.HasPrefix(w, "--") {
					paths = append(paths, w)
				}
			}
			if len(paths) >= 2 {
				cur.copies[paths[len(paths)-1]] = from + ":" + paths[0]
			}
		case "USER":
			cur.user = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &entrypoint); err != nil || len(entrypoint) == 0 {
				r.bad(f.rel, "ENTRYPOINT %s is not the exec form [\"/path\", ...]", rest)
				entrypoint = nil
			} else if len(entrypoint) > 1 {
				r.checkCommand(f.rel+": ENTRYPOINT", entrypoint[1:], nil)
			}
		case "CMD":
			var args []string
			if err := json.Unmarshal([]byte(rest), &args); err != nil {
				r.bad(f.rel, "CMD %s is not the exec form", rest)
			} else {
				r.checkCommand(f.rel+": CMD", args, nil)
			}
		case "HEALTHCHECK":
			_, exec, ok := strings.Cut(rest, "CMD ")
			var args []string
			if !ok || json.Unmarshal([]byte(strings.TrimSpace(exec)), &args) != nil || len(args) < 2 {
				r.bad(f.rel, "HEALTHCHECK %s is not CMD [\"/binary\", \"healthcheck\", URL]", rest)
			} else {
				r.checkCommand(f.rel+": HEALTHCHECK", args[1:], nil)
			}
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				name, _, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(name, "SCHEDULER_") && !slices.ContainsFunc(allCommands(), func(c *cobra.Command) bool { _, ok := commandEnv(c)[name]; return ok }) {
					r.bad(f.rel, "ENV %s: no command of the scheduler reads it", name)
				}
			}
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				if p, _, _ = strings.Cut(p, "/"); !defaultPorts[p] {
					r.bad(f.rel, "EXPOSE %s is no role's default --listen port", p)
				}
			}
		case "ARG", "WORKDIR", "LABEL":
		default:
			r.bad(f.rel, "the check does not know the instruction %s", instr)
		}
	}
	if len(stages) == 0 {
		r.bad(f.rel, "no FROM")
		return img
	}
	final := stages[len(stages)-1]
	built := map[string]string{}
	for _, s := range stages {
		if s.built != "" {
			built[s.name] = s.built
		}
	}
	if len(built) == 0 {
		r.bad(f.rel, "no stage runs go build -o FILE ./cmd/scheduler")
	}
	if entrypoint == nil {
		r.bad(f.rel, "no ENTRYPOINT runs the binary")
	} else if src, ok := final.copies[entrypoint[0]]; !ok {
		r.bad(f.rel, "ENTRYPOINT runs %s, which the last stage does not copy in", entrypoint[0])
	} else if from, file, _ := strings.Cut(src, ":"); built[from] != file {
		r.bad(f.rel, "ENTRYPOINT runs %s, copied from %s, which is not the binary go build writes", entrypoint[0], src)
	} else {
		img.entrypoint = entrypoint[0]
	}
	switch {
	case final.user == "":
		r.bad(f.rel, "the last stage sets no USER: the image would run as root")
	case regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`).MatchString(final.user):
		img.numericUser = true
	default:
		r.bad(f.rel, "USER %s is not numeric: Kubernetes can check runAsNonRoot only for a numeric user", final.user)
	}
	return img
}

// ignorePatterns reads a .gitignore or .dockerignore file.
func ignorePatterns(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// ignored reports whether the slash-separated path p is excluded by the
// patterns (the last matching one wins; "!" re-includes; "**/" matches any
// folders; a pattern that matches a folder excludes what is in it).
func ignored(patterns []string, p string) bool {
	out := false
	for _, pat := range patterns {
		neg := strings.HasPrefix(pat, "!")
		pat = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(pat, "!"), "/"), "/")
		if matchIgnore(pat, p) {
			out = !neg
		}
	}
	return out
}

func matchIgnore(pat, p string) bool {
	parts := strings.Split(p, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		if rest, ok := strings.CutPrefix(pat, "**/"); ok {
			for j := 0; j <= i; j++ {
				if m, _ := path.Match(rest, strings.Join(parts[j:i+1], "/")); m {
					return true
				}
			}
			continue
		}
		if m, _ := path.Match(pat, prefix); m {
			return true
		}
	}
	return false
}

// checkDockerignore checks that a Dockerfile's ignore file belongs to a
// Dockerfile beside it and keeps what the build needs: go.mod, go.sum and
// every Go source of the module.
func (r *deployReport) checkDockerignore(f deployFile, exists func(string) bool, repo string) {
	if name := strings.TrimSuffix(f.rel, ".dockerignore"); !strings.HasSuffix(f.rel, "/.dockerignore") && !exists(name) {
		r.bad(f.rel, "there is no %s for it to apply to", name)
	}
	patterns := ignorePatterns(f.data)
	need := []string{"go.mod", "go.sum"}
	if repo != "" {
		_ = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				rel, _ := filepath.Rel(repo, p)
				need = append(need, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	for _, p := range need {
		if ignored(patterns, p) {
			r.bad(f.rel, "leaves %s out of the build context", p)
		}
	}
}

// checkDotenv checks a compose variables file: every variable is one the
// compose files beside it use; the example holds no values (no secret in
// the repository) and the file it is copied to is ignored by git.
func (r *deployReport) checkDotenv(f deployFile, used map[string]bool, gitignores map[string][]string) {
	example := path.Base(f.rel) != ".env"
	for i, line := range strings.Split(string(f.data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			r.bad(f.rel, "line %d is not NAME=value", i+1)
			continue
		}
		if !used[name] {
			r.bad(f.rel, "%s is not used by a compose file in %s", name, path.Dir(f.rel))
		}
		if example && strings.TrimSpace(value) != "" {
			r.bad(f.rel, "%s has a value: an example holds no secrets, only instructions", name)
		}
	}
	if example {
		folder := path.Dir(f.rel)
		if !ignored(gitignores[folder], ".env") {
			r.bad(folder, "%s asks for .env, which no .gitignore in %s/ ignores", path.Base(f.rel), folder)
		}
	}
}

// composeService is a compose service as the check classifies it.
type composeService struct {
	name, kind string // kind: scheduler, nats, redis, azurite
	svc        map[string]any
	ports      map[string]int // nats: client, monitor; redis: client; azurite: queue
}

// checkCompose checks a compose file: every service has a health check;
// the scheduler's are commands of the binary, with the variables their
// role reads, health checks that run the binary against their --listen
// port; NATS runs JetStream with its monitoring port and storage on a
// volume; Redis appends to a file on a volume.
func (r *deployReport) checkCompose(f deployFile, dir string, dockerfiles map[string]*dockerImage, vars map[string]bool) {
	docs, _ := yamlDocuments(f.data)
	doc := docs[0]
	for _, m := range interpolRE.FindAllStringSubmatch(string(f.data), -1) {
		vars[m[1]] = true
	}
	folder := path.Dir(f.rel)
	services := ymap(doc["services"])
	volumes := ymap(doc["volumes"])
	builtImages := map[string]bool{}
	var image *dockerImage
	for _, name := range slices.Sorted(maps.Keys(services)) {
		build := ymap(ymap(services[name])["build"])
		if build == nil {
			continue
		}
		where := f.rel + " service " + name
		builtImages[ystr(ymap(services[name])["image"])] = true
		context := path.Join(folder, ystr(build["context"]))
		dockerfile := path.Join(context, cmpOr(ystr(build["dockerfile"]), "Dockerfile"))
		// The context is the repository root, one above the deploy folder.
		rel, ok := strings.CutPrefix(dockerfile, "../")
		rel, ok2 := strings.CutPrefix(rel, path.Base(filepath.Clean(dir))+"/")
		if image = dockerfiles[rel]; !ok || !ok2 || image == nil {
			r.bad(where, "build.dockerfile %s is not a Dockerfile of the deploy folder", dockerfile)
		} else if target := ystr(build["target"]); target != "" && !image.stages[target] {
			r.bad(where, "build.target %s is not a stage of %s", target, image.file)
		}
	}
	all := map[string]*composeService{}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc := ymap(services[name])
		img := ystr(svc["image"])
		s := &composeService{name: name, svc: svc, ports: map[string]int{}}
		switch {
		case svc["build"] != nil || builtImages[img]:
			s.kind = "scheduler"
		case strings.HasPrefix(img, "nats:") || img == "nats":
			s.kind = "nats"
		case strings.HasPrefix(img, "redis:") || img == "redis":
			s.kind = "redis"
		case strings.Contains(img, "azure-storage/azurite"):
			s.kind = "azurite"
		default:
			r.bad(f.rel+" service "+name, "the check does not know the image %s; teach cmd/scheduler/deploy_test.go to check it", img)
		}
		all[name] = s
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		s := all[name]
		where := f.rel + " service " + name
		health := ymap(s.svc["healthcheck"])
		test := ystrs(health["test"])
		if len(test) == 0 || test[0] == "NONE" || health["disable"] == true {
			r.bad(where, "has no health check")
		}
		mounts := map[string]string{} // target → source
		for _, v := range ylist(s.svc["volumes"]) {
			src, target, _ := strings.Cut(ystr(v), ":")
			target, _, _ = strings.Cut(target, ":")
			if m := ymap(v); m != nil {
				src, target = ystr(m["source"]), ystr(m["target"])
			}
			mounts[target] = src
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := volumes[src]; !ok {
					r.bad(where, "mounts the volume %s, which the file does not declare", src)
				}
			}
		}
		deps := ystrs(s.svc["depends_on"])
		if m := ymap(s.svc["depends_on"]); m != nil {
			deps = slices.Sorted(maps.Keys(m))
		}
		for _, d := range deps {
			if all[d] == nil {
				r.bad(where, "depends on %s, which is not a service", d)
			}
		}
		command := ystrs(s.svc["command"])
		switch s.kind {
		case "nats":
			opts, err := r.natsOptions(command, mounts, dir, folder)
			if err != nil {
				r.bad(where, "the NATS command line: %v", err)
				break
			}
			s.ports["client"] = cmp.Or(opts.Port, 4222)
			if !opts.JetStream {
				r.bad(where, "runs NATS without JetStream")
			}
			if monitor := opts.HTTPPort; monitor == 0 {
				r.bad(where, "runs NATS without its monitoring port (--http_port)")
			} else {
				s.ports["monitor"] = monitor
				r.natsMonitor[where+" --http_port"] = monitor
				if u := urlIn(test); u != nil {
					r.natsMonitor[where+" health check"] = portOf(u)
				}
			}
			if store := cmpOr(opts.StoreDir, "/tmp"); mounts[store] == "" {
				r.bad(where, "JetStream stores in %s, which is not a mounted volume", store)
			}
			r.natsSync++
			if !opts.SyncAlways {
				r.bad(where, "JetStream acknowledges writes before they reach the disk (it syncs every %s): set sync_interval: always in the jetstream block of a --config file", cmp.Or(opts.SyncInterval, 2*time.Minute))
			}
		case "redis":
			s.ports["client"] = 6379
			if v := cliValue(command, "--port"); v != "" {
				s.ports["client"], _ = strconv.Atoi(v)
			}
			if cliValue(command, "--appendonly") != "yes" {
				r.bad(where, "runs without AOF (--appendonly yes)")
			}
			if p := cliValue(command, "--maxmemory-policy"); p != "" && p != "noeviction" {
				r.bad(where, "--maxmemory-policy %s: an evicted timer key loses occurrences unnoticed", p)
			}
			if _, ok := mounts["/data"]; !ok {
				r.bad(where, "keeps its data (/data) on no volume")
			}
		case "azurite":
			s.ports["queue"] = 10001
			if v := cliValue(command, "--queuePort"); v != "" {
				s.ports["queue"], _ = strconv.Atoi(v)
			}
			if !strings.Contains(strings.Join(test, " "), strconv.Itoa(s.ports["queue"])) {
				r.bad(where, "the health check does not ask the queue port %d", s.ports["queue"])
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		if s := all[name]; s.kind == "scheduler" {
			r.checkComposeRole(f.rel, s, all, image)
		}
	}
}

// natsOptions reads a NATS server's command line as nats-server does,
// with the configuration file --config names: the file of the deploy
// folder that the service mounts there.
func (r *deployReport) natsOptions(command []string, mounts map[string]string, dir, folder string) (*server.Options, error) {
	args := slices.Clone(command)
	if conf := cliValue(args, "--config", "-c"); conf != "" {
		src := mounts[conf]
		if !strings.HasPrefix(src, ".") {
			return nil, fmt.Errorf("--config %s is not a file of the deploy folder mounted into the container", conf)
		}
		rel := path.Join(folder, src)
		r.natsConfs[rel] = true
		host := filepath.Join(dir, filepath.FromSlash(rel))
		for i, a := range args {
			switch {
			case a == conf && i > 0 && (args[i-1] == "--config" || args[i-1] == "-c"):
				args[i] = host
			case a == "--config="+conf || a == "-c="+conf:
				args[i] = strings.SplitN(a, "=", 2)[0] + "=" + host
			}
		}
	}
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nop := func() {}
	return server.ConfigureOptions(fs, args, nop, nop, nop)
}

// checkNATSHelmValues checks values for the official NATS Helm chart: a
// cluster of three nodes or more, JetStream on persistent volumes, every
// write synced to disk before it is acknowledged, the monitoring port.
func (r *deployReport) checkNATSHelmValues(f deployFile, doc map[string]any) {
	cfg := ymap(doc["config"])
	cluster, js := ymap(cfg["cluster"]), ymap(cfg["jetstream"])
	if cluster["enabled"] != true {
		r.bad(f.rel, "config.cluster.enabled is not true: one NATS server, whose loss stops the scheduler")
	}
	if n, ok := yint(cluster["replicas"]); ok && n < 3 {
		r.bad(f.rel, "config.cluster.replicas is %d; the streams' three replicas need three nodes", n)
	}
	if js["enabled"] != true {
		r.bad(f.rel, "config.jetstream.enabled is not true")
	}
	if store := ymap(js["fileStore"]); store["enabled"] == false || ymap(store["pvc"])["enabled"] == false {
		r.bad(f.rel, "JetStream does not keep its file store on a persistent volume (config.jetstream.fileStore.pvc)")
	}
	r.natsSync++
	if v := ystr(ymap(js["merge"])["sync_interval"]); v != "always" {
		r.bad(f.rel, "JetStream acknowledges writes before they reach the disk (sync_interval %q): set config.jetstream.merge.sync_interval: always", cmpOr(v, "2m, the default"))
	}
	monitor := ymap(cfg["monitor"])
	if monitor["enabled"] == false {
		r.bad(f.rel, "config.monitor.enabled is false: KEDA reads the workers' lag from the monitoring port")
		return
	}
	port := 8222
	if p, ok := yint(monitor["port"]); ok {
		port = p
	}
	r.natsMonitor[f.rel+" config.monitor.port"] = port
}

// serverNames names the servers a role connects to.
var serverNames = map[string]string{"nats": "NATS", "redis": "Redis", "azurite": "Azurite"}

// checkComposeRole checks one scheduler service of a compose file.
func (r *deployReport) checkComposeRole(file string, s *composeService, all map[string]*composeService, image *dockerImage) {
	where := file + " service " + s.name
	env := map[string]*string{}
	if m := ymap(s.svc["environment"]); m != nil {
		for k, v := range m {
			value := ystr(v)
			env[k] = &value
		}
	} else {
		for _, kv := range ystrs(s.svc["environment"]) {
			k, v, ok := strings.Cut(kv, "=")
			env[k] = nil
			if ok {
				env[k] = &v
			}
		}
	}
	for k, v := range env {
		if v != nil && strings.Contains(*v, "$") {
			env[k] = nil // interpolated: its value is not in the file
		}
	}
	cmd := r.checkCommand(where, ystrs(s.svc["command"]), env)
	if cmd == nil {
		return
	}
	run := r.serveRole(file, where, cmd)
	if run == nil {
		return
	}
	port := run.listenPort()
	// The servers a role connects to, when they are services of the file.
	for name, kind := range map[string]string{"SCHEDULER_NATS_URL": "nats", "SCHEDULER_REDIS_URL": "redis", "SCHEDULER_STORAGE_QUEUE_ENDPOINT": "azurite"} {
		v := env[name]
		if v == nil {
			continue
		}
		u, err := url.Parse(strings.ReplaceAll(*v, "{account}", "account"))
		if err != nil || all[u.Hostname()] == nil {
			continue
		}
		target := all[u.Hostname()]
		if target.kind != kind {
			r.bad(where, "%s names the service %s, which is not %s", name, target.name, serverNames[kind])
			continue
		}
		port := target.ports["client"]
		if kind == "azurite" {
			port = target.ports["queue"]
		}
		if portOf(u) != port {
			r.bad(where, "%s asks port %d of %s, which listens on %d", name, portOf(u), target.name, port)
		}
	}
	test := ystrs(ymap(s.svc["healthcheck"])["test"])
	switch {
	case len(test) < 3 || test[0] != "CMD":
		r.bad(where, "the health check is not [\"CMD\", binary, \"healthcheck\", URL]: the image has no shell")
	case image != nil && test[1] != image.entrypoint:
		r.bad(where, "the health check runs %s; the image's binary is %s", test[1], image.entrypoint)
	default:
		hc := r.checkCommand(where+": the health check", test[2:], nil)
		if hc == nil {
			break
		}
		r.healthchecks++
		if hc.Name() != "healthcheck" || len(hc.Flags().Args()) != 1 {
			r.bad(where, "the health check is not `healthcheck URL`")
			break
		}
		u, err := url.Parse(hc.Flags().Args()[0])
		switch {
		case err != nil:
			r.bad(where, "the health check's URL: %v", err)
		case !service.Loopback(u.Host) && u.Hostname() != "localhost":
			r.bad(where, "the health check asks %s; it runs inside the container, so ask loopback", u.Host)
		case portOf(u) != port:
			r.bad(where, "the health check asks port %d; the role listens on %d", portOf(u), port)
		case u.Path != "/readyz":
			r.bad(where, "the health check asks %s, want /readyz", u.Path)
		}
	}
	for _, p := range ylist(s.svc["ports"]) {
		target := 0
		if m := ymap(p); m != nil {
			target, _ = yint(m["target"])
		} else {
			spec, _, _ := strings.Cut(ystr(p), "/")
			target, _ = strconv.Atoi(spec[strings.LastIndex(spec, ":")+1:])
		}
		if target != port {
			r.bad(where, "publishes container port %d; the role listens on %d", target, port)
		}
	}
	replicas := 1
	if n, ok := yint(ymap(s.svc["deploy"])["replicas"]); ok {
		replicas = n
	}
	if run.role == "planner" && replicas < 2 {
		r.bad(where, "runs %d planner; run two for availability", replicas)
	}
	if run.role == "worker" {
		grace := 10 * time.Second // compose's default
		if v := ystr(s.svc["stop_grace_period"]); v != "" {
			grace, _ = time.ParseDuration(v)
		}
		if grace < workerGrace(run) {
			r.bad(where, "stop_grace_period is %s; a worker stopping takes up to %s", grace, workerGrace(run))
		}
	}
}

// cliValue returns the value of a command-line option given as one of
// names ("--opt value" or "--opt=value"), "true" for one without a value,
// "" when it is absent.
func cliValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
			if a == n {
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					return args[i+1]
				}
				return "true"
			}
		}
	}
	return ""
}

// urlIn returns the first URL among args.
func urlIn(args []string) *url.URL {
	for _, a := range args {
		if strings.Contains(a, "://") {
			if u, err := url.Parse(a); err == nil {
				return u
			}
		}
	}
	return nil
}

// portOf returns the port of a URL, with the scheme's default.
func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	return map[string]int{"http": 80, "https": 443, "nats": 4222, "redis": 6379}[u.Scheme]
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// kubeFolder is a kustomize folder: its kustomization and manifests.
type kubeFolder struct {
	dir            string
	kustomization  map[string]any
	manifests      []string // files holding manifests
	docs           []kubeDoc
	secrets        map[string]map[string]bool
	configMaps     map[string]map[string]string
	configMapsUsed map[string]bool
	imageNames     map[string]bool
	deployments    map[string]*kubeDeployment
	pdbCovered     map[string]bool
}

type kubeDoc struct {
	file string
	doc  map[string]any
}

func (d kubeDoc) name() string { return ystr(ymap(d.doc["metadata"])["name"]) }

// kubeDeployment is a Deployment with the role each container runs.
type kubeDeployment struct {
	doc    kubeDoc
	labels map[string]any
	roles  map[string]*kubeRole // container name → role
}

type kubeRole struct {
	run   *roleRun
	ports map[string]int // port name → number
}

// add files the documents of one file.
func (k *kubeFolder) add(r *deployReport, file string, docs []map[string]any) {
	for _, doc := range docs {
		if doc["kind"] == "Kustomization" {
			if k.kustomization != nil {
				r.bad(file, "a second Kustomization in %s", k.dir)
			}
			k.kustomization = doc
			continue
		}
		if !slices.Contains(k.manifests, path.Base(file)) {
			k.manifests = append(k.manifests, path.Base(file))
		}
		d := kubeDoc{file, doc}
		if d.name() == "" || ystr(doc["apiVersion"]) == "" {
			r.bad(file, "a %v without apiVersion or metadata.name", doc["kind"])
		}
		k.docs = append(k.docs, d)
	}
}

// check checks the folder's manifests against each other, the binary and
// the image.
func (k *kubeFolder) check(r *deployReport, exists func(string) bool, image *dockerImage) {
	if k.kustomization == nil {
		r.bad(k.dir, "manifests without a kustomization.yaml")
	}
	listed := ystrs(k.kustomization["resources"])
	for _, res := range listed {
		if !exists(path.Join(k.dir, res)) {
			r.bad(k.dir+"/kustomization.yaml", "lists %s, which does not exist", res)
		}
	}
	for _, m := range k.manifests {
		if !slices.Contains(listed, m) {
			r.problems = append(r.problems, fmt.Sprintf("%s/%s is not listed in %s/kustomization.yaml", k.dir, m, k.dir))
		}
	}
	k.secrets, k.configMaps, k.configMapsUsed = map[string]map[string]bool{}, map[string]map[string]string{}, map[string]bool{}
	k.imageNames, k.deployments, k.pdbCovered = map[string]bool{}, map[string]*kubeDeployment{}, map[string]bool{}
	for _, img := range ylist(k.kustomization["images"]) {
		k.imageNames[ystr(ymap(img)["name"])] = true
	}
	for _, d := range k.docs {
		where := fmt.Sprintf("%s: %v %s", d.file, d.doc["kind"], d.name())
		switch d.doc["kind"] {
		case "Secret":
			keys := map[string]bool{}
			for _, field := range []string{"stringData", "data"} {
				data := ymap(d.doc[field])
				for _, key := range slices.Sorted(maps.Keys(data)) {
					keys[key] = true
					if ystr(data[key]) != "" {
						r.bad(where, "%s holds a value: keep real secrets out of the repository, leave a placeholder that fails closed", key)
					}
				}
			}
			k.secrets[d.name()] = keys
		case "ConfigMap":
			data := map[string]string{}
			for key, v := range ymap(d.doc["data"]) {
				data[key] = ystr(v)
			}
			k.configMaps[d.name()] = data
		}
	}
	for _, d := range k.docs {
		switch d.doc["kind"] {
		case "Namespace", "Secret", "ConfigMap":
		case "Deployment":
			k.checkDeployment(r, d, image)
		case "Service", "PodDisruptionBudget", "ScaledObject":
		default:
			r.bad(d.file, "the check does not know the kind %v; teach cmd/scheduler/deploy_test.go to check it", d.doc["kind"])
		}
	}
	for _, d := range k.docs {
		where := fmt.Sprintf("%s: %v %s", d.file, d.doc["kind"], d.name())
		switch d.doc["kind"] {
		case "Service":
			k.checkService(r, where, d)
		case "PodDisruptionBudget":
			selector := ymap(ymap(ymap(d.doc["spec"])["selector"])["matchLabels"])
			if dep := k.selected(selector); dep == nil {
				r.bad(where, "selects no Deployment's pods")
			} else {
				k.pdbCovered[dep.doc.name()] = true
			}
		case "ScaledObject":
			r.scaledObjects++
			k.checkScaledObject(r, where, d)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.configMaps)) {
		if !k.configMapsUsed[name] {
			r.bad(k.dir, "no container loads the ConfigMap %s", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.deployments)) {
		dep := k.deployments[name]
		for _, role := range dep.roles {
			if role.run.role == "planner" && !k.pdbCovered[name] {
				r.bad(dep.doc.file, "no PodDisruptionBudget keeps the planners of %s available", name)
			}
		}
	}
}

// selected returns the Deployment whose pods carry every label of
// selector.
func (k *kubeFolder) selected(selector map[string]any) *kubeDeployment {
	if len(selector) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(k.deployments)) {
		dep := k.deployments[name]
		match := true
		for key, v := range selector {
			if ystr(dep.labels[key]) != ystr(v) {
				match = false
			}
		}
		if match {
			return dep
		}
	}
	return nil
}

// checkDeployment checks the scheduler containers of a Deployment: their
// command, variables, probes, ports, key file and grace period.
func (k *kubeFolder) checkDeployment(r *deployReport, d kubeDoc, image *dockerImage) {
	spec := ymap(d.doc["spec"])
	template := ymap(spec["template"])
	pod := ymap(template["spec"])
	dep := &kubeDeployment{doc: d, labels: ymap(ymap(template["metadata"])["labels"]), roles: map[string]*kubeRole{}}
	k.deployments[d.name()] = dep
	where := fmt.Sprintf("%s: Deployment %s", d.file, d.name())
	if !maps.EqualFunc(ymap(ymap(spec["selector"])["matchLabels"]), dep.labels, func(a, b any) bool { return ystr(a) == ystr(b) }) {
		r.bad(where, "spec.selector.matchLabels are not the pod template's labels")
	}
	volumes := map[string]map[string]any{}
	for _, v := range ylist(pod["volumes"]) {
		volumes[ystr(ymap(v)["name"])] = ymap(v)
		if secret := ymap(ymap(v)["secret"]); secret != nil {
			name := ystr(secret["secretName"])
			keys, ok := k.secrets[name]
			if !ok {
				r.bad(where, "mounts the secret %s, which is not in %s", name, k.dir)
			}
			for _, item := range ylist(secret["items"]) {
				if key := ystr(ymap(item)["key"]); ok && !keys[key] {
					r.bad(where, "secret %s has no key %s", name, key)
				}
			}
		}
	}
	nonRoot := ymap(pod["securityContext"])["runAsNonRoot"] == true
	podUser := ymap(pod["securityContext"])["runAsUser"] != nil
	replicas := 1
	if n, ok := yint(spec["replicas"]); ok {
		replicas = n
	}
	grace := 30 * time.Second // Kubernetes' default
	if n, ok := yint(pod["terminationGracePeriodSeconds"]); ok {
		grace = time.Duration(n) * time.Second
	}
	for _, c := range ylist(pod["containers"]) {
		ct := ymap(c)
		cwhere := fmt.Sprintf("%s container %s", where, ystr(ct["name"]))
		img := ystr(ct["image"])
		if !k.imageNames[img] {
			r.bad(cwhere, "runs the image %s, which is not the scheduler's image in kustomization.yaml images", img)
			continue
		}
		args := ystrs(ct["args"])
		if command := ystrs(ct["command"]); len(command) > 0 {
			if image != nil && command[0] != image.entrypoint {
				r.bad(cwhere, "command runs %s; the image's binary is %s", command[0], image.entrypoint)
			}
			args = append(command[1:], args...)
		}
		env := k.containerEnv(r, cwhere, ct)
		cmd := r.checkCommand(cwhere, args, env)
		if cmd == nil {
			continue
		}
		run := r.serveRole(k.dir, cwhere, cmd)
		if run == nil {
			continue
		}
		role := &kubeRole{run: run, ports: map[string]int{}}
		dep.roles[ystr(ct["name"])] = role
		port, metricsPort := run.listenPort(), run.metricsPort()
		if p, ok := ymap(ymap(template["metadata"])["annotations"])["prometheus.io/port"]; ok && ystr(p) != strconv.Itoa(metricsPort) {
			if metricsPort == port {
				r.bad(cwhere, "prometheus.io/port is %s; /metrics is on the role's --listen port %d", ystr(p), port)
			} else {
				r.bad(cwhere, "prometheus.io/port is %s; /metrics is on the role's --metrics-listen port %d", ystr(p), metricsPort)
			}
		}
		for _, p := range ylist(ct["ports"]) {
			n, _ := yint(ymap(p)["containerPort"])
			role.ports[ystr(ymap(p)["name"])] = n
			if n != port && n != metricsPort {
				r.bad(cwhere, "declares container port %d; the role listens on %d", n, port)
			}
		}
		// The startup probe holds the liveness probe off while the role
		// waits at start-up for NATS and Redis.
		for probe, want := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
			if probe == "startupProbe" && ct[probe] != nil {
				period, failures := 10, 3
				if n, ok := yint(ymap(ct[probe])["periodSeconds"]); ok {
					period = n
				}
				if n, ok := yint(ymap(ct[probe])["failureThreshold"]); ok {
					failures = n
				}
				if d := time.Duration(period*failures) * time.Second; d < 2*time.Minute {
					r.bad(cwhere, "the startupProbe gives the role %s to start; it waits for NATS and Redis: allow 2m or more", d)
				}
			}
			get := ymap(ymap(ct[probe])["httpGet"])
			if get == nil {
				r.bad(cwhere, "has no %s with httpGet", probe)
				continue
			}
			if p := ystr(get["path"]); p != want {
				r.bad(cwhere, "the %s asks %s, want %s", probe, p, want)
			}
			if n := role.port(get["port"]); n != port {
				r.bad(cwhere, "the %s asks port %s; the role listens on %d", probe, ystr(get["port"]), port)
			}
		}
		if file := run.flag("encryption-key-file"); file != "" {
			mounted := false
			for _, m := range ylist(ct["volumeMounts"]) {
				vol := volumes[ystr(ymap(m)["name"])]
				if vol == nil {
					r.bad(cwhere, "mounts the volume %s, which the pod does not have", ystr(ymap(m)["name"]))
					continue
				}
				secret := ymap(vol["secret"])
				if secret == nil || ystr(ymap(m)["mountPath"]) != path.Dir(file) {
					continue
				}
				for _, item := range ylist(secret["items"]) {
					mounted = mounted || ystr(ymap(item)["path"]) == path.Base(file)
				}
				mounted = mounted || (secret["items"] == nil && k.secrets[ystr(secret["secretName"])][path.Base(file)])
			}
			if !mounted {
				r.bad(cwhere, "reads the encryption key from %s, which no secret volume provides", file)
			}
		}
		if nonRoot || ymap(ct["securityContext"])["runAsNonRoot"] == true {
			if image != nil && !image.numericUser && !podUser && ymap(ct["securityContext"])["runAsUser"] == nil {
				r.bad(cwhere, "runAsNonRoot needs a numeric USER in the Dockerfile or a runAsUser")
			}
		}
		switch run.role {
		case "planner":
			if replicas < 2 {
				r.bad(where, "runs %d planner; run two for availability", replicas)
			}
		case "worker":
			if grace < workerGrace(run) {
				r.bad(where, "terminationGracePeriodSeconds is %d; a worker stopping takes up to %s", int(grace.Seconds()), workerGrace(run))
			}
		}
	}
	if len(dep.roles) == 0 {
		r.bad(where, "runs no role of the scheduler")
	}
}

// port resolves a probe's or Service's port, a number or a port's name.
func (k *kubeRole) port(v any) int {
	if n, ok := yint(v); ok {
		return n
	}
	if n, ok := k.ports[ystr(v)]; ok {
		return n
	}
	return -1
}

// containerEnv returns the variables a container gets, with the values
// the manifests spell out, and checks the ConfigMaps and Secrets they
// come from.
func (k *kubeFolder) containerEnv(r *deployReport, where string, ct map[string]any) map[string]*string {
	env := map[string]*string{}
	for _, e := range ylist(ct["envFrom"]) {
		if ref := ymap(ymap(e)["configMapRef"]); ref != nil {
			k.configMapsUsed[ystr(ref["name"])] = true
			data, ok := k.configMaps[ystr(ref["name"])]
			if !ok {
				r.bad(where, "loads the ConfigMap %s, which is not in %s", ystr(ref["name"]), k.dir)
			}
			for key, v := range data {
				env[key] = &v
			}
		}
		if ref := ymap(ymap(e)["secretRef"]); ref != nil {
			keys, ok := k.secrets[ystr(ref["name"])]
			if !ok {
				r.bad(where, "loads the Secret %s, which is not in %s", ystr(ref["name"]), k.dir)
			}
			for key := range keys {
				env[key] = nil
			}
		}
	}
	for _, e := range ylist(ct["env"]) {
		m := ymap(e)
		name := ystr(m["name"])
		if v, ok := m["value"]; ok {
			value := ystr(v)
			env[name] = &value
			continue
		}
		env[name] = nil
		from := ymap(m["valueFrom"])
		if ref := ymap(from["secretKeyRef"]); ref != nil {
			keys, ok := k.secrets[ystr(ref["name"])]
			switch {
			case !ok:
				r.bad(where, "%s comes from the secret %s, which is not in %s", name, ystr(ref["name"]), k.dir)
			case !keys[ystr(ref["key"])]:
				r.bad(where, "%s: secret %s has no key %s", name, ystr(ref["name"]), ystr(ref["key"]))
			}
		}
		if ref := ymap(from["configMapKeyRef"]); ref != nil {
			k.configMapsUsed[ystr(ref["name"])] = true
			data, ok := k.configMaps[ystr(ref["name"])]
			if v, found := data[ystr(ref["key"])]; !ok || !found {
				r.bad(where, "%s: ConfigMap %s has no key %s", name, ystr(ref["name"]), ystr(ref["key"]))
			} else {
				env[name] = &v
			}
		}
	}
	return env
}

// checkService checks that a Service sends its ports to a role's --listen
// port.
func (k *kubeFolder) checkService(r *deployReport, where string, d kubeDoc) {
	spec := ymap(d.doc["spec"])
	dep := k.selected(ymap(spec["selector"]))
	if dep == nil || len(dep.roles) == 0 {
		r.bad(where, "selects no pods of a role")
		return
	}
	for _, p := range ylist(spec["ports"]) {
		pm := ymap(p)
		target := pm["targetPort"]
		if target == nil {
			target = pm["port"]
		}
		for _, role := range dep.roles {
			if n, want := role.port(target), role.run.listenPort(); n != want {
				r.bad(where, "port %s targets %s; the role listens on %d", ystr(pm["port"]), ystr(target), want)
			}
		}
	}
}

// kedaJetStreamMetadata are the metadata of KEDA's nats-jetstream trigger
// (keda.sh/docs/scalers/nats-jetstream), required or not.
var kedaJetStreamMetadata = map[string]bool{
	"natsServerMonitoringEndpoint": true, "account": true, "stream": true, "consumer": true,
	"lagThreshold": false, "activationLagThreshold": false, "useHttps": false,
}

// checkScaledObject checks a KEDA ScaledObject: it scales a worker
// Deployment on the lag of the workers' consumer of the EXEC stream, read
// from the NATS monitoring port.
func (k *kubeFolder) checkScaledObject(r *deployReport, where string, d kubeDoc) {
	spec := ymap(d.doc["spec"])
	target := ymap(spec["scaleTargetRef"])
	var worker *roleRun
	if dep := k.deployments[ystr(target["name"])]; dep != nil && cmpOr(ystr(target["kind"]), "Deployment") == "Deployment" {
		for _, role := range dep.roles {
			if role.run.role == "worker" {
				worker = role.run
			}
		}
	}
	if worker == nil {
		r.bad(where, "scales %q, which is not a Deployment of a worker", ystr(target["name"]))
	}
	lo, _ := yint(spec["minReplicaCount"])
	if hi, ok := yint(spec["maxReplicaCount"]); ok && hi < lo {
		r.bad(where, "maxReplicaCount %d is below minReplicaCount %d", hi, lo)
	}
	found := false
	for _, t := range ylist(spec["triggers"]) {
		trig := ymap(t)
		if trig["type"] != "nats-jetstream" {
			r.bad(where, "a %v trigger: the workers scale on the lag of their consumer (nats-jetstream)", trig["type"])
			continue
		}
		found = true
		meta := ymap(trig["metadata"])
		for _, key := range slices.Sorted(maps.Keys(meta)) {
			if _, ok := kedaJetStreamMetadata[key]; !ok {
				r.bad(where, "unknown metadata %s of the nats-jetstream trigger", key)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(kedaJetStreamMetadata)) {
			if kedaJetStreamMetadata[key] && ystr(meta[key]) == "" {
				r.bad(where, "the nats-jetstream trigger has no %s", key)
			}
		}
		for key, want := range map[string]string{"stream": contracts.ExecStream, "consumer": contracts.WorkersConsumer} {
			if got := ystr(meta[key]); got != want {
				r.bad(where, "%s is %q, want %q (contracts)", key, got, want)
			}
		}
		endpoint := ystr(meta["natsServerMonitoringEndpoint"])
		if _, p, err := net.SplitHostPort(endpoint); err != nil || strings.Contains(endpoint, "/") {
			r.bad(where, "natsServerMonitoringEndpoint %q is not host:port", endpoint)
		} else {
			r.natsMonitor[where+" natsServerMonitoringEndpoint"], _ = strconv.Atoi(p)
		}
		if v, ok := meta["useHttps"]; ok {
			if _, err := strconv.ParseBool(ystr(v)); err != nil {
				r.bad(where, "useHttps %q is not a boolean", ystr(v))
			}
		}
		lag := 10 // KEDA's default
		if v, ok := meta["lagThreshold"]; ok {
			var err error
			if lag, err = strconv.Atoi(ystr(v)); err != nil || lag < 1 {
				r.bad(where, "lagThreshold %q is not a positive integer", ystr(v))
			}
		}
		if worker != nil && lag > worker.int("concurrency") {
			r.bad(where, "lagThreshold %d is above the workers' --concurrency %d: executions would queue behind busy workers before one is added", lag, worker.int("concurrency"))
		}
	}
	if !found {
		r.bad(where, "no nats-jetstream trigger")
	}
}

// checkMarkdown checks the scheduler commands in a Markdown file's code
// (fenced blocks and inline spans), the flags and variables it names, and
// its relative links.
func (r *deployReport) checkMarkdown(f deployFile, exists func(string) bool) {
	text := string(f.data)
	known := map[string]bool{}
	flags := map[string]bool{}
	for _, c := range allCommands() {
		for name := range commandEnv(c) {
			known[name] = true
		}
		c.Flags().VisitAll(func(fl *pflag.Flag) { flags[fl.Name] = true })
		c.PersistentFlags().VisitAll(func(fl *pflag.Flag) { flags[fl.Name] = true })
	}
	for _, name := range schedEnvRE.FindAllString(text, -1) {
		if !known[name] {
			r.bad(f.rel, "no command of the scheduler reads %s", name)
			known[name] = true // once
		}
	}
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if !exists(path.Join(path.Dir(f.rel), target)) {
			r.bad(f.rel, "the link %s leads nowhere", m[1])
		}
	}
	inFence := false
	var prose []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			for _, args := range commandsIn(line) {
				r.docCommands++
				r.checkCommand(f.rel+": "+strings.TrimSpace(line), args, nil)
			}
			continue
		}
		prose = append(prose, line)
	}
	for _, m := range inlineRE.FindAllStringSubmatch(strings.Join(prose, "\n"), -1) {
		span := m[1]
		for _, args := range commandsIn(span) {
			r.docCommands++
			r.checkCommand(f.rel+": `"+span+"`", args, nil)
		}
		if fm := flagTokenRE.FindStringSubmatch(span); fm != nil && !flags[fm[1]] {
			r.bad(f.rel, "`%s`: no command of the scheduler has --%s", span, fm[1])
		}
	}
}

// commandsIn returns the arguments of each scheduler command in a shell
// line: one that starts with scheduler or /scheduler, or go run
// ./cmd/scheduler, at the start of the line or after $(, |, && or ;.
func commandsIn(line string) [][]string {
	var out [][]string
	for _, sep := range []string{"$(", "|", "&&", ";"} {
		line = strings.ReplaceAll(line, sep, "\n")
	}
	for _, part := range strings.Split(line, "\n") {
		part, _, _ = strings.Cut(part, " #")
		words := strings.Fields(strings.ReplaceAll(part, ")", " "))
		switch {
		case len(words) >= 1 && (words[0] == "scheduler" || words[0] == "/scheduler"):
			out = append(out, words[1:])
		case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/scheduler":
			out = append(out, words[3:])
		}
	}
	return out
}
