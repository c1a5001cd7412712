package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/jobscheduler/scheduler/contracts"
)

// deployDir is the deploy folder, from this package.
const deployDir = "../../deploy"

// container is one run of the scheduler binary a deploy file describes:
// its arguments, environment, the port its probes or health check ask,
// and the ports it declares.
type container struct {
	where  string
	args   []string
	env    map[string]string
	probes []int
	ports  []int
}

// checkContainer reports what in c does not match the binary: an unknown
// command or flag, an environment variable the command does not read, a
// probe or port other than the one it listens on.
func checkContainer(c container) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, c.where+": "+fmt.Sprintf(format, a...)) }
	cmd, rest, err := newRootCommand().Find(c.args)
	if err != nil || cmd.Parent() == nil || !cmd.Runnable() {
		bad("%q is not a command of the scheduler", strings.Join(c.args, " "))
		return problems
	}
	cmd.Flags().SetOutput(io.Discard)
	if err := cmd.ParseFlags(rest); err != nil {
		bad("scheduler %s: %v", cmd.CommandPath(), err)
		return problems
	}
	known := map[string]bool{}
	for _, name := range envOfUsage.FindAllStringSubmatch(flagUsages(cmd), -1) {
		known[name[1]] = true
	}
	if strings.HasPrefix(cmd.CommandPath(), "scheduler serve planner") || strings.HasPrefix(cmd.CommandPath(), "scheduler serve worker") {
		known[envEncryptionKey] = true // read by loadKey
	}
	for name := range c.env {
		if strings.HasPrefix(name, "SCHEDULER_") && !known[name] {
			bad("scheduler %s does not read %s", strings.TrimPrefix(cmd.CommandPath(), "scheduler "), name)
		}
	}
	listen := c.env[envListen]
	if f := cmd.Flags().Lookup("listen"); f != nil && f.Changed {
		listen = f.Value.String()
	}
	if f := cmd.Flags().Lookup("listen"); f != nil && listen == "" {
		listen = f.DefValue
	}
	if listen == "" {
		return problems
	}
	_, portText, err := net.SplitHostPort(listen)
	port, _ := strconv.Atoi(portText)
	if err != nil || port == 0 {
		bad("listens on %q, which has no port", listen)
		return problems
	}
	if host, _, _ := net.SplitHostPort(listen); host == "127.0.0.1" || host == "localhost" {
		bad("listens on %s: probes and other containers cannot reach loopback", listen)
	}
	if len(c.probes) == 0 {
		bad("has no health check or probes")
	}
	for _, p := range slices.Concat(c.probes, c.ports) {
		if p != port {
			bad("a probe, health check or port names %d; the role listens on %d", p, port)
		}
	}
	return problems
}

// flagUsages returns the usage text of every flag of cmd, inherited ones
// included.
func flagUsages(cmd *cobra.Command) string {
	return cmd.Flags().FlagUsages() + cmd.InheritedFlags().FlagUsages()
}

// portOfURL returns the port of an http URL, 80 when it names none.
func portOfURL(s string) int {
	u, err := url.Parse(s)
	if err != nil {
		return -1
	}
	if u.Port() == "" {
		return 80
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// strs reads a YAML list of scalars.
func strs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// composeContainers returns the scheduler containers of a compose file,
// and checks its other services' settings the roles depend on.
func composeContainers(doc map[string]any, file string) ([]container, []string) {
	var (
		out      []container
		problems []string
	)
	services, _ := doc["services"].(map[string]any)
	if len(services) == 0 {
		return nil, []string{file + ": no services"}
	}
	for name, v := range services {
		svc, _ := v.(map[string]any)
		health, _ := svc["healthcheck"].(map[string]any)
		if health == nil {
			problems = append(problems, fmt.Sprintf("%s: service %s has no health check", file, name))
		}
		if name == "nats" && !slices.Contains(strs(svc["command"]), "8222") {
			problems = append(problems, file+": NATS has no monitoring port 8222")
		}
		if name == "redis" && !strings.Contains(strings.Join(strs(svc["command"]), " "), "--appendonly yes") {
			problems = append(problems, file+": Redis runs without AOF")
		}
		build, _ := svc["build"].(map[string]any)
		image, _ := svc["image"].(string)
		if build == nil && !strings.HasPrefix(image, "scheduler") {
			continue
		}
		c := container{where: fmt.Sprintf("%s service %s", file, name), args: strs(svc["command"]), env: map[string]string{}}
		env, _ := svc["environment"].(map[string]any)
		for k, v := range env {
			c.env[k] = fmt.Sprint(v)
		}
		test := strs(health["test"])
		if len(test) >= 4 && test[1] == "/scheduler" && test[2] == "healthcheck" {
			c.probes = append(c.probes, portOfURL(test[3]))
		} else {
			problems = append(problems, c.where+": the health check is not `/scheduler healthcheck URL`")
		}
		for _, p := range strs(svc["ports"]) {
			target := p[strings.LastIndex(p, ":")+1:]
			n, _ := strconv.Atoi(target)
			c.ports = append(c.ports, n)
		}
		out = append(out, c)
	}
	return out, problems
}

// kubeContainers returns the scheduler containers of a Kubernetes
// manifest, with the environment of the ConfigMaps they load.
func kubeContainers(doc map[string]any, file string, configMaps map[string]map[string]string) []container {
	spec, _ := doc["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	podSpec, _ := template["spec"].(map[string]any)
	list, _ := podSpec["containers"].([]any)
	var out []container
	for _, x := range list {
		ct, _ := x.(map[string]any)
		image, _ := ct["image"].(string)
		if !strings.HasPrefix(image, "scheduler") {
			continue
		}
		meta, _ := doc["metadata"].(map[string]any)
		c := container{where: fmt.Sprintf("%s %v container %v", file, meta["name"], ct["name"]), args: strs(ct["args"]), env: map[string]string{}}
		envFrom, _ := ct["envFrom"].([]any)
		for _, e := range envFrom {
			ref, _ := e.(map[string]any)["configMapRef"].(map[string]any)
			for k, v := range configMaps[fmt.Sprint(ref["name"])] {
				c.env[k] = v
			}
		}
		envs, _ := ct["env"].([]any)
		for _, e := range envs {
			m, _ := e.(map[string]any)
			c.env[fmt.Sprint(m["name"])] = fmt.Sprint(m["value"])
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			p, _ := ct[probe].(map[string]any)
			get, _ := p["httpGet"].(map[string]any)
			if get == nil {
				c.probes = append(c.probes, -1)
				continue
			}
			n, _ := strconv.Atoi(fmt.Sprint(get["port"]))
			c.probes = append(c.probes, n)
		}
		ports, _ := ct["ports"].([]any)
		for _, p := range ports {
			n, _ := strconv.Atoi(fmt.Sprint(p.(map[string]any)["containerPort"]))
			c.ports = append(c.ports, n)
		}
		out = append(out, c)
	}
	return out
}

// checkScaledObject checks a KEDA ScaledObject against the execution
// consumer and the worker Deployments.
func checkScaledObject(doc map[string]any, file string, deployments []string) []string {
	var problems []string
	spec, _ := doc["spec"].(map[string]any)
	target, _ := spec["scaleTargetRef"].(map[string]any)
	if name := fmt.Sprint(target["name"]); !slices.Contains(deployments, name) {
		problems = append(problems, fmt.Sprintf("%s: scales %q, which is not a Deployment of deploy/", file, name))
	}
	triggers, _ := spec["triggers"].([]any)
	found := false
	for _, t := range triggers {
		trig, _ := t.(map[string]any)
		if trig["type"] != "nats-jetstream" {
			continue
		}
		found = true
		meta, _ := trig["metadata"].(map[string]any)
		for key, want := range map[string]string{"stream": contracts.ExecStream, "consumer": contracts.WorkersConsumer} {
			if got := fmt.Sprint(meta[key]); got != want {
				problems = append(problems, fmt.Sprintf("%s: %s is %q, want %q", file, key, got, want))
			}
		}
		for _, key := range []string{"natsServerMonitoringEndpoint", "account", "lagThreshold"} {
			if meta[key] == nil {
				problems = append(problems, fmt.Sprintf("%s: the nats-jetstream trigger has no %s", file, key))
			}
		}
		if _, port, err := net.SplitHostPort(fmt.Sprint(meta["natsServerMonitoringEndpoint"])); err != nil || port != "8222" {
			problems = append(problems, file+": natsServerMonitoringEndpoint is not NATS's monitoring port 8222")
		}
	}
	if !found {
		problems = append(problems, file+": no nats-jetstream trigger")
	}
	return problems
}

// checkDockerfile checks that the image builds the binary and runs it as
// /scheduler, the path the health checks use.
func checkDockerfile(data []byte, file string) []string {
	var problems []string
	text := string(data)
	if !regexp.MustCompile(`go build .*\./cmd/scheduler`).MatchString(text) {
		problems = append(problems, file+": does not build ./cmd/scheduler")
	}
	if !strings.Contains(text, `ENTRYPOINT ["/scheduler"]`) {
		problems = append(problems, file+`: the entrypoint is not ["/scheduler"]`)
	}
	return problems
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(data []byte) ([]map[string]any, error) {
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
		docs = append(docs, doc)
	}
}

// checkDeploy checks every file under dir and returns the problems.
func checkDeploy(dir string) []string {
	var (
		problems    []string
		containers  []container
		configMaps  = map[string]map[string]string{}
		deployments []string
		scaled      []map[string]any
		kustomized  = map[string][]string{} // folder → resources listed
		manifests   = map[string][]string{} // folder → manifest files
	)
	type kube struct {
		file string
		doc  map[string]any
	}
	var kubeDocs []kube
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(rel, ".md"):
		case filepath.Base(rel) == "Dockerfile":
			problems = append(problems, checkDockerfile(data, rel)...)
		case strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml"):
			docs, err := yamlDocs(data)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
				return nil
			}
			for _, doc := range docs {
				switch {
				case doc["services"] != nil:
					cs, ps := composeContainers(doc, rel)
					containers, problems = append(containers, cs...), append(problems, ps...)
				case doc["kind"] == "Kustomization":
					kustomized[filepath.Dir(rel)] = strs(doc["resources"])
				case doc["kind"] != nil:
					manifests[filepath.Dir(rel)] = append(manifests[filepath.Dir(rel)], filepath.Base(rel))
					kubeDocs = append(kubeDocs, kube{rel, doc})
				default:
					problems = append(problems, rel+": neither a compose file nor a Kubernetes manifest")
				}
			}
		default:
			problems = append(problems, rel+": a file the deploy check does not know how to check")
		}
		return nil
	})
	if err != nil {
		return append(problems, err.Error())
	}
	for _, k := range kubeDocs {
		meta, _ := k.doc["metadata"].(map[string]any)
		switch k.doc["kind"] {
		case "ConfigMap":
			data := map[string]string{}
			m, _ := k.doc["data"].(map[string]any)
			for key, v := range m {
				data[key] = fmt.Sprint(v)
			}
			configMaps[fmt.Sprint(meta["name"])] = data
		case "Deployment":
			deployments = append(deployments, fmt.Sprint(meta["name"]))
		case "ScaledObject":
			scaled = append(scaled, k.doc)
		}
	}
	for _, k := range kubeDocs {
		if k.doc["kind"] == "Deployment" {
			cs := kubeContainers(k.doc, k.file, configMaps)
			if len(cs) == 0 {
				problems = append(problems, k.file+": a Deployment that runs no scheduler container")
			}
			containers = append(containers, cs...)
		}
	}
	for _, so := range scaled {
		problems = append(problems, checkScaledObject(so, "keda", deployments)...)
	}
	for _, c := range containers {
		problems = append(problems, checkContainer(c)...)
	}
	for folder, files := range manifests {
		listed := kustomized[folder]
		for _, f := range files {
			if !slices.Contains(listed, f) {
				problems = append(problems, fmt.Sprintf("%s/%s is not listed in its kustomization.yaml", folder, f))
			}
		}
		for _, f := range listed {
			if !slices.Contains(files, f) {
				problems = append(problems, fmt.Sprintf("%s/kustomization.yaml lists %s, which is not a manifest there", folder, f))
			}
		}
	}
	return problems
}

// Every file in deploy/ matches the binary: commands, flags, environment
// variables, ports and probes, the stream and consumer KEDA watches, the
// kustomization's resources.
func TestTheDeployFilesMatchTheBinary(t *testing.T) {
	t.Parallel()
	for _, p := range checkDeploy(deployDir) {
		t.Error(p)
	}
	// The check covers both kinds of deployment.
	for _, f := range []string{"compose/compose.yaml", "kubernetes/kustomization.yaml", "kubernetes/keda.yaml", "Dockerfile"} {
		if _, err := os.Stat(filepath.Join(deployDir, f)); err != nil {
			t.Errorf("deploy/%s: %v", f, err)
		}
	}
}

// The check finds the mistakes it is there for.
func TestTheDeployCheckFindsMistakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("compose.yaml", `
services:
  nats:
    command: ["--jetstream"]
    healthcheck: {test: ["CMD", "true"]}
  worker:
    image: scheduler
    command: ["serve", "worker", "--concurency", "8"]
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "http://127.0.0.1:8081/readyz"]}
  planner:
    image: scheduler
    command: ["serve", "planner"]
    environment: {SCHEDULER_LISTEN: "0.0.0.0:8080", SCHEDULER_HISTORY_MAX_AGE: "1h"}
    healthcheck: {test: ["CMD", "/scheduler", "healthcheck", "http://127.0.0.1:9999/readyz"]}
`)
	write("k8s/kustomization.yaml", "kind: Kustomization\nresources: [keda.yaml, missing.yaml]\n")
	write("k8s/keda.yaml", `kind: ScaledObject
spec:
  scaleTargetRef: {name: nowhere}
  triggers:
    - type: nats-jetstream
      metadata: {natsServerMonitoringEndpoint: "nats:4222", account: $G, stream: EXEC, consumer: worker, lagThreshold: "10"}
`)
	write("k8s/extra.yaml", "kind: Service\nmetadata: {name: x}\n")
	write("notes.txt", "hello")
	got := strings.Join(checkDeploy(dir), "\n")
	for _, want := range []string{
		"NATS has no monitoring port 8222",
		"unknown flag: --concurency",
		"does not read SCHEDULER_HISTORY_MAX_AGE",
		"names 9999; the role listens on 8080",
		`scales "nowhere"`,
		`consumer is "worker", want "workers"`,
		"not NATS's monitoring port 8222",
		"extra.yaml is not listed",
		"lists missing.yaml",
		"notes.txt: a file the deploy check does not know",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the check does not report %q; it reports:\n%s", want, got)
		}
	}
}
