package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes of the client commands, which scripts can rely on.
const (
	exitRefused     = 1 // the server refused the request (400, 409, …) or failed (5xx)
	exitUsage       = 2 // bad flags or arguments, an unreadable file
	exitNotFound    = 3 // the collection or job does not exist (404)
	exitUnreachable = 4 // the server could not be reached, or refused the token (401, 403)
)

// exitCodesHelp is the table of exit codes shown in the root's and the
// client commands' help.
const exitCodesHelp = `Exit codes of collections, jobs and history:
  0  success
  1  the server refused the request (400, 409: an invalid definition, a
     conflict) or failed (5xx)
  2  usage: bad flags or arguments, an unreadable definition file
  3  not found (404): the collection or job does not exist
  4  the server could not be reached, or it refused the token (401, 403)
dev, serve, preview and healthcheck exit 1 when they fail, 2 on bad flags.`

// Environment variables of the client commands.
const (
	envServer        = "SCHEDULER_SERVER"
	envToken         = "SCHEDULER_TOKEN"
	envSubscription  = "SCHEDULER_SUBSCRIPTION"
	envResourceGroup = "SCHEDULER_RESOURCE_GROUP"
	envCollection    = "SCHEDULER_COLLECTION"
)

// clientOptions are the flags every client command shares.
type clientOptions struct {
	server, token               string
	subscription, resourceGroup string
	collection                  string
	output                      string
}

// addClientFlags adds the connection and scope flags to a command group;
// withCollection adds --collection too (jobs and history).
func addClientFlags(cmd *cobra.Command, o *clientOptions, withCollection bool) {
	flags := cmd.PersistentFlags()
	flags.StringVar(&o.server, "server", env(envServer, "http://127.0.0.1:8080"), "base URL of the scheduler's REST API (env "+envServer+")")
	// The token's default is read at run time, so that help never shows it.
	flags.StringVar(&o.token, "token", "", "bearer token for the API (env "+envToken+")")
	flags.StringVar(&o.subscription, "subscription", env(envSubscription, "dev"), "subscription of the job collections (env "+envSubscription+")")
	flags.StringVar(&o.resourceGroup, "resource-group", env(envResourceGroup, "dev"), "resource group of the job collections (env "+envResourceGroup+")")
	flags.StringVarP(&o.output, "output", "o", "", "output format: table or json (default: table for lists, json for one resource)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	if withCollection {
		flags.StringVarP(&o.collection, "collection", "c", env(envCollection, ""), "job collection (env "+envCollection+")")
		_ = cmd.RegisterFlagCompletionFunc("collection", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			return o.completeCollections(cmd.Context())
		})
	}
}

// check validates the options before a request.
func (o *clientOptions) check(needCollection bool) error {
	if o.token == "" {
		o.token = os.Getenv(envToken)
	}
	u, err := url.Parse(o.server)
	if err != nil {
		return &exitError{code: exitUsage, err: errors.New("--server is not a URL")}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("--server %q is not an http:// or https:// URL", u.Redacted())}
	}
	switch o.output {
	case "", "table", "json":
	default:
		return &exitError{code: exitUsage, err: fmt.Errorf("--output must be table or json, not %q", o.output)}
	}
	if o.subscription == "" || o.resourceGroup == "" {
		return &exitError{code: exitUsage, err: errors.New("--subscription and --resource-group must not be empty")}
	}
	if needCollection && o.collection == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("a job collection is required: --collection or %s", envCollection)}
	}
	return nil
}

// where names the server in messages, without a password its URL may
// hold.
func (o *clientOptions) where() string {
	if u, err := url.Parse(o.server); err == nil {
		return u.Redacted()
	}
	return "the server"
}

// collectionsPath is the path of the resource group's job collections,
// with name appended when given.
func (o *clientOptions) collectionsPath(name ...string) string {
	p := "/subscriptions/" + url.PathEscape(o.subscription) + "/resourceGroups/" + url.PathEscape(o.resourceGroup) +
		"/providers/Microsoft.Scheduler/jobCollections"
	for _, n := range name {
		p += "/" + url.PathEscape(n)
	}
	return p
}

// jobPath is the path of a job of the collection, with more segments
// appended ("run", "history").
func (o *clientOptions) jobPath(job string, more ...string) string {
	p := o.collectionsPath(o.collection, "jobs")
	if job != "" {
		p += "/" + url.PathEscape(job)
	}
	for _, m := range more {
		p += "/" + m
	}
	return p
}

// apiError is an ARM error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Target  string `json:"target"`
			Message string `json:"message"`
		} `json:"details"`
	} `json:"error"`
}

// httpClient bounds every request of the client commands.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends a request to the API and decodes a successful answer into out
// (when not nil). An error answer becomes an exitError with the code the
// status calls for and the API's message.
func (o *clientOptions) call(ctx context.Context, method, path string, query url.Values, body []byte, out any) error {
	return o.callAs(ctx, method, path, query, body, "application/json", out)
}

// callAs is call with a body of the given content type.
func (o *clientOptions) callAs(ctx context.Context, method, path string, query url.Values, body []byte, contentType string, out any) error {
	if query == nil {
		query = url.Values{}
	}
	query.Set("api-version", "2016-03-01")
	target := strings.TrimSuffix(o.server, "/") + path + "?" + query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &exitError{code: exitUnreachable, err: fmt.Errorf("cannot reach the scheduler at %s: %v (set --server or %s)", o.where(), err, envServer)}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("reading the answer of %s: %v", o.where(), err)}
	}
	if res.StatusCode >= 300 {
		return answerError(res.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &exitError{code: exitRefused, err: fmt.Errorf("the answer of %s is not what the scheduler sends: %v", o.where(), err)}
	}
	return nil
}

// answerError turns an error answer into an exitError: the API's code and
// message, then each detail whose field the message does not name already.
func answerError(status int, data []byte) error {
	code, hint := exitRefused, ""
	switch status {
	case http.StatusNotFound:
		code = exitNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		code, hint = exitUnreachable, " (set --token or "+envToken+")"
	}
	var e apiError
	if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
		return &exitError{code: code, err: fmt.Errorf("the server answered %d %s%s", status, http.StatusText(status), hint)}
	}
	msg := e.Error.Code + ": " + e.Error.Message + hint
	for _, d := range e.Error.Details {
		if d.Target != "" && !strings.Contains(e.Error.Message, d.Target) {
			msg += "\n  " + d.Target + ": " + d.Message
		}
	}
	return &exitError{code: code, err: errors.New(msg)}
}

// readDefinition reads a JSON definition from a file, or stdin for "-".
func readDefinition(cmd *cobra.Command, file string) ([]byte, error) {
	data, err := readFileArg(cmd, file, "a definition file is required: -f FILE (- for stdin)", "the definition")
	if err != nil {
		return nil, err
	}
	if !json.Valid(data) {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s is not JSON", orStdin(file))}
	}
	return data, nil
}

// readFileArg reads the file of -f, or stdin for "-"; missing is the error
// of no file, and what names the content in a read error.
func readFileArg(cmd *cobra.Command, file, missing, what string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	switch file {
	case "":
		return nil, &exitError{code: exitUsage, err: errors.New(missing)}
	case "-":
		data, err = io.ReadAll(cmd.InOrStdin())
	default:
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("reading %s: %w", what, err)}
	}
	return data, nil
}

// orStdin names a definition file, "stdin" for "-".
func orStdin(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}

// printJSON writes v indented.
func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// completionTimeout bounds the request behind a completion, so that a
// server that does not answer never holds up the shell.
const completionTimeout = 3 * time.Second

// completeCollections lists the collections' names for shell completion,
// quietly nothing when the server cannot tell.
func (o *clientOptions) completeCollections(ctx context.Context) ([]string, cobra.ShellCompDirective) {
	return o.completeNames(ctx, false, o.collectionsPath())
}

// completeJobs lists the collection's jobs' names for shell completion.
func (o *clientOptions) completeJobs(ctx context.Context) ([]string, cobra.ShellCompDirective) {
	return o.completeNames(ctx, true, o.jobPath(""))
}

// completeNames lists the names of the resources at path; a job's name
// comes as "collection/job", and only the job's part is kept.
func (o *clientOptions) completeNames(ctx context.Context, needCollection bool, path string) ([]string, cobra.ShellCompDirective) {
	if o.check(needCollection) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	var list struct {
		Value []struct {
			Name string `json:"name"`
		} `json:"value"`
	}
	if o.call(ctx, http.MethodGet, path, nil, nil, &list) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(list.Value))
	for i, r := range list.Value {
		_, job, isJob := strings.Cut(r.Name, "/")
		names[i] = r.Name
		if isJob {
			names[i] = job
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// oneName is the argument rule of commands that name one resource; its
// error is a usage error. A name holds no "/": a job's collection is given
// with --collection, not as COLLECTION/JOB.
func oneName(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 || args[0] == "" {
			return &exitError{code: exitUsage, err: fmt.Errorf("name one %s", what)}
		}
		if strings.Contains(args[0], "/") {
			msg := fmt.Sprintf("%q: a %s's name holds no '/'", args[0], what)
			if what == "job" || what == "calendar" {
				msg += "; give the job collection with --collection or " + envCollection
			}
			return &exitError{code: exitUsage, err: errors.New(msg)}
		}
		return nil
	}
}

// silenceFlagErrors makes flag errors usage errors with exit code 2.
func silenceFlagErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
}
