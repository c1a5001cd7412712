// Shared by the scenarios: launches Debian's Chromium headless through
// playwright-core, opens a page that records every console error, uncaught
// exception and failed request, and fails the scenario on any of them.
//
// The Go test (browser_test.go) sets the environment:
//   SCHEDULER_CONSOLE_URL     the console's base URL, such as http://127.0.0.1:41234
//   SCHEDULER_CONSOLE_TOKENS  a JSON object of token name to bearer token ({} when none)
//   SCHEDULER_CHROMIUM        the Chromium executable (default /usr/bin/chromium)
//   SCHEDULER_SCREENSHOTS=1   screenshot() writes docs/console/<name>.png
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));

// The repository's root: this file is planner/console/browsertest/lib.mjs.
export const repoRoot = join(here, '..', '..', '..');

// baseURL is the console's address, without a trailing slash.
export const baseURL = (process.env.SCHEDULER_CONSOLE_URL || '').replace(/\/$/, '');

// tokens maps a token's name (as the Go test granted it) to the token.
export const tokens = JSON.parse(process.env.SCHEDULER_CONSOLE_TOKENS || '{}');

// How long one action or navigation may take before the scenario fails.
const actionTimeout = 10_000;

// run launches Chromium, opens a page and calls scenario({ page, allow,
// url }). The scenario fails (exit status 1) when it throws, or when the
// page logged a console error, threw an uncaught exception or had a
// request fail, unless a pattern the scenario gave allow() matches it.
export async function run(scenario) {
  if (!baseURL) {
    console.error('SCHEDULER_CONSOLE_URL is not set: run the scenarios through go test');
    process.exit(2);
  }
  const started = Date.now();
  const browser = await chromium.launch({
    executablePath: process.env.SCHEDULER_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // Chromium's sandbox refuses to start as root (CI's containers).
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  let failed = false;
  try {
    const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(actionTimeout);
    context.setDefaultNavigationTimeout(actionTimeout);
    const page = await context.newPage();
    const problems = watch(page);
    await scenario({ page, allow: problems.allow, url: (path) => baseURL + path });
    const left = problems.unexpected();
    if (left.length > 0) {
      throw new Error(`the page reported ${left.length} problem(s):\n  ${left.join('\n  ')}`);
    }
  } catch (err) {
    failed = true;
    console.error(`FAIL: ${err.stack || err}`);
  } finally {
    await browser.close();
  }
  console.log(`${failed ? 'failed' : 'passed'} in ${Date.now() - started} ms`);
  process.exitCode = failed ? 1 : 0;
}

// watch records the page's console errors, uncaught exceptions and failed
// requests, each logged as it happens.
function watch(page) {
  const seen = [];
  const allowed = [];
  const note = (what) => {
    seen.push(what);
    console.log(`page: ${what}`);
  };
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location()?.url;
    note(`console error: ${msg.text()}${where ? ` (${where})` : ''}`);
  });
  page.on('pageerror', (err) => note(`uncaught exception: ${err.message}`));
  page.on('requestfailed', (req) => {
    // Leaving a job page ends its live stream (an EventSource) that way:
    // not a problem of the page.
    if (req.resourceType() === 'eventsource' && req.failure()?.errorText === 'net::ERR_ABORTED') return;
    // A check of the editor's draft is cancelled by a newer one (hx-sync
    // replace) or by leaving the page: aborted on purpose, not failed.
    if (['xhr', 'fetch'].includes(req.resourceType()) && req.failure()?.errorText === 'net::ERR_ABORTED') return;
    note(`request failed: ${req.method()} ${req.url()}: ${req.failure()?.errorText}`);
  });
  return {
    allow: (pattern) => allowed.push(pattern),
    unexpected: () => seen.filter((what) => !allowed.some((p) => p.test(what))),
  };
}

// open navigates to path and asserts the response's status (200 unless
// told), returning the response.
export async function open(page, path, status = 200) {
  const res = await page.goto(path);
  assert.ok(res, `no response for ${path}`);
  if (res.status() !== status) {
    const body = (await res.text()).slice(0, 500);
    assert.fail(`GET ${path}: status ${res.status()}, want ${status}; body:\n${body}`);
  }
  return res;
}

// signIn submits token on the sign-in form of the page (open it first,
// or follow the console's redirect to /login) and returns the response to
// the form's POST; when the console accepts the token, it waits until the
// page has left /login.
export async function signIn(page, token) {
  const field = page.locator('form[action="/login"] input[name="token"]');
  await field.fill(token);
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/login'),
    field.press('Enter'),
  ]);
  if (res.status() === 303) {
    await page.waitForURL((u) => u.pathname !== '/login');
  }
  await page.waitForLoadState();
  return res;
}

// screenshot writes docs/console/<name>.png when SCHEDULER_SCREENSHOTS=1,
// and does nothing otherwise.
export async function screenshot(page, name) {
  if (process.env.SCHEDULER_SCREENSHOTS !== '1') return;
  const dir = join(repoRoot, 'docs', 'console');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: docs/console/${name}.png`);
}

// apiVersion is the version the scenarios' API calls ask for.
const apiVersion = '2016-03-01';

// api calls the console's REST API from Node.js (not the page), with token
// as the bearer when given, and returns { status, body } (body parsed
// when it is JSON).
export async function api(method, path, { body, token } = {}) {
  const url = new URL(baseURL + path);
  url.searchParams.set('api-version', apiVersion);
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body: parsed };
}

// expectStatus calls api and fails unless it answers want.
export async function expectStatus(want, method, path, options) {
  const res = await api(method, path, options);
  if (res.status !== want) {
    assert.fail(`${method} ${path}: status ${res.status}, want ${want}: ${JSON.stringify(res.body).slice(0, 500)}`);
  }
  return res.body;
}

// collectionPath and jobPath are the API paths of a collection and a job.
export const collectionPath = (sub, rg, c) =>
  `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Scheduler/jobCollections/${c}`;
export const jobPath = (sub, rg, c, job) => `${collectionPath(sub, rg, c)}/jobs/${job}`;

// consolePath is the console's page of a collection, or of one of its jobs.
export const consolePath = (sub, rg, c, job) => `/c/${sub}/${rg}/${c}` + (job ? `/jobs/${job}` : '');

// createCollection creates an Enabled Standard collection through the API.
export async function createCollection(sub, rg, c, token) {
  await expectStatus(201, 'PUT', collectionPath(sub, rg, c), { token, body: { properties: { sku: { name: 'Standard' } } } });
}

// createJob creates a job through the API with the given properties.
export async function createJob(sub, rg, c, job, properties, token) {
  await expectStatus(201, 'PUT', jobPath(sub, rg, c, job), { token, body: { properties } });
}

// httpAction is a Http action that calls uri with method.
export const httpAction = (uri, method = 'GET', more = {}) => ({ type: 'Http', request: { uri, method, ...more } });

// history returns a job's history entries, newest first.
export async function history(sub, rg, c, job, token) {
  return (await expectStatus(200, 'GET', jobPath(sub, rg, c, job) + '/history', { token })).value;
}

// until calls check until it returns a truthy value, which it returns;
// it fails with what when check has not held within timeout ms.
export async function until(what, check, timeout = 15_000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const got = await check();
      if (got) return got;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      assert.fail(`${what}: not within ${timeout} ms${last ? ` (last error: ${last.message})` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// target starts an HTTP server on 127.0.0.1 for jobs to call. It answers
// each request with its status (200 unless told; set target.status to
// change it) and records it in requests ({ method, url, authorization }).
// With hold, a request is answered only once release() is called, so that
// the scenario decides when a run ends.
export async function target({ status = 200, hold = false } = {}) {
  const held = [];
  const t = {
    status,
    requests: [],
    release: () => held.splice(0).forEach((answer) => answer()),
  };
  const server = createServer((req, res) => {
    t.requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    req.resume();
    const answer = () => res.writeHead(t.status, { 'content-type': 'text/plain' }).end(t.status < 400 ? 'ok' : 'failing');
    if (hold) held.push(answer);
    else answer();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.url = `http://127.0.0.1:${server.address().port}/`;
  t.close = () => {
    t.release();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  };
  return t;
}

// csrfOf returns the csrf value of the page's forms (the sign-out form
// carries it on every page of a signed-in viewer).
export async function csrfOf(page) {
  const value = await page.locator('input[name="csrf"]').first().getAttribute('value');
  assert.ok(value, 'the page has no csrf field');
  return value;
}

// submit clicks the button named name (a form's POST) and waits for the
// page it leads to, returning that page's response.
export async function submit(page, name) {
  const [res] = await Promise.all([
    page.waitForNavigation(),
    page.getByRole('button', { name, exact: true }).click(),
  ]);
  return res;
}

// actionNames returns the names of the buttons and button-like links in
// <main>.
export async function actionNames(page) {
  return page.locator('main button, main a.button').allTextContents().then((all) => all.map((s) => s.trim()));
}

export { assert };
