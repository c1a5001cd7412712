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
  page.on('requestfailed', (req) => note(`request failed: ${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
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

export { assert };
