// Package browsertest drives the planner's web console in headless
// Chromium: its tests run `scheduler dev` as a process and a Node.js
// scenario per test (a .mjs file in this directory, through playwright-core)
// against the console it serves.
//
// The scenarios use Debian's Chromium, launched by path (/usr/bin/chromium,
// or SCHEDULER_CHROMIUM), never a browser Playwright downloads. Install the
// one npm package with `npm ci` in this directory (.ci/run does). Without
// Chromium, Node.js or the package every test is skipped with a message
// saying what is missing, so `go test ./...` passes on any machine with Go;
// with SCHEDULER_BROWSER_TESTS=required (set by .ci/run under CI) it fails
// instead.
//
// With SCHEDULER_SCREENSHOTS=1 the scenarios write the screenshots of
// docs/console.
package browsertest
