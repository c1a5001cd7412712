// Each action of the job and collection pages changes the job as the API
// then reports it: Run now calls the job's endpoint and its result appears
// in the history table without a reload (server-sent events) and in the
// API's history; Disable and Enable switch the job's state; the
// collection's Disable and Enable switch the collection's; Delete, through
// its confirmation page, removes the job.
import {
  assert, collectionPath, consolePath, createCollection, createJob, expectStatus, history, httpAction, jobPath, open, run,
  screenshot, submit, target, until,
} from './lib.mjs';

const [sub, rg, coll, job] = ['dev', 'actions', 'billing', 'invoice-run'];
const page$ = consolePath(sub, rg, coll, job);

await run(async ({ page }) => {
  const endpoint = await target({ hold: true });
  try {
    await createCollection(sub, rg, coll);
    // Monthly at 09:00 in Berlin from tomorrow: no run comes by itself while
    // the scenario runs, and the next ten cross the start of summer time.
    const tomorrow = new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await createJob(sub, rg, coll, job, {
      startTime: tomorrow,
      action: { ...httpAction(endpoint.url + 'invoices', 'POST', { body: '{"batch": "monthly"}', headers: { 'Content-Type': 'application/json' } }),
        retryPolicy: { retryType: 'None' } },
      recurrence: { frequency: 'Month', interval: 1, schedule: { monthDays: [1], hours: [9], minutes: [0] }, timeZone: 'Europe/Berlin' },
    });

    await open(page, page$);
    const next = page.locator('#h-next + .scroll table');
    assert.deepEqual((await next.locator('thead th').allTextContents()).map((s) => s.trim()), ['#', 'UTC', 'Europe/Berlin', 'Daylight saving']);
    assert.equal(await next.locator('tbody tr').count(), 10);
    assert.match(await next.locator('tbody tr').first().textContent(), /09:00:00 \+01:00 CET/);
    assert.match(await next.locator('tr.dst').first().textContent(), /daylight saving time starts: now CEST/);

    // Run now: the page the form leads to follows the job's results; the
    // endpoint answers only once the stream is open, so the row can only
    // arrive live.
    const rows = page.locator('table.history tbody tr');
    const ran = async (status, count) => {
      const res = await submit(page, 'Run now');
      assert.equal(res.status(), 200);
      assert.match(await page.locator('.flash').textContent(), /asked to run now/);
      await page.waitForSelector('table.history[data-live-state="open"]');
      await page.evaluate(() => { window.sameDocument = true; });
      assert.equal(await rows.count(), count - 1, 'a row arrived before the run ended');
      endpoint.status = status;
      await until('the endpoint was called', () => endpoint.requests.length === count);
      endpoint.release();
      await page.waitForFunction((n) => document.querySelectorAll('table.history tbody tr').length === n, count);
      assert.ok(await page.evaluate(() => window.sameDocument === true), 'the result reloaded the page');
      assert.equal(await rows.first().locator('.badge').textContent(), status < 400 ? 'Completed' : 'Failed');
      assert.match(await rows.first().getAttribute('class'), /\bnew\b/);
      const entries = await until('the API\'s history has the run', async () => {
        const h = await history(sub, rg, coll, job);
        return h.length === count && h;
      });
      // The API leaves out the status of a completed attempt, as Azure did.
      assert.equal(entries[0].properties.status ?? 'Completed', status < 400 ? 'Completed' : 'Failed');
    };
    await ran(200, 1);
    assert.equal(endpoint.requests[0].method, 'POST');
    assert.equal(endpoint.requests[0].url, '/invoices');
    await ran(500, 2);
    assert.match(await rows.first().locator('.msg').textContent(), /'Internal Server Error'.*Body: failing/s);
    const status = (await expectStatus(200, 'GET', jobPath(sub, rg, coll, job))).properties.status;
    assert.equal(status.executionCount, 2);
    assert.equal(status.failureCount, 1);

    // Disable, then Enable.
    await submit(page, 'Disable');
    assert.equal((await expectStatus(200, 'GET', jobPath(sub, rg, coll, job))).properties.state, 'Disabled');
    assert.equal((await page.locator('#job-state').textContent()).trim(), 'Disabled');
    assert.equal(await page.getByRole('button', { name: 'Enable', exact: true }).count(), 1, 'a Disabled job offers no Enable');
    assert.equal(await page.getByRole('button', { name: 'Disable', exact: true }).count(), 0);
    await submit(page, 'Enable');
    assert.equal((await expectStatus(200, 'GET', jobPath(sub, rg, coll, job))).properties.state, 'Enabled');
    assert.equal((await page.locator('#job-state').textContent()).trim(), 'Enabled');
    assert.equal(await page.getByRole('button', { name: 'Disable', exact: true }).count(), 1);

    await open(page, page$);
    await page.waitForSelector('table.history[data-live-state="open"]');
    await screenshot(page, 'job');

    // The collection's Disable and Enable.
    await open(page, consolePath(sub, rg, coll));
    await submit(page, 'Disable the collection');
    assert.equal((await expectStatus(200, 'GET', collectionPath(sub, rg, coll))).properties.state, 'Disabled');
    assert.equal((await expectStatus(200, 'GET', jobPath(sub, rg, coll, job))).properties.state, 'Disabled');
    await submit(page, 'Enable the collection');
    assert.equal((await expectStatus(200, 'GET', collectionPath(sub, rg, coll))).properties.state, 'Enabled');
    assert.equal((await expectStatus(200, 'GET', jobPath(sub, rg, coll, job))).properties.state, 'Enabled');
    assert.equal(await page.getByRole('button', { name: 'Disable the collection' }).count(), 1);

    // Delete, through the confirmation page.
    await open(page, page$);
    await page.getByRole('link', { name: 'Delete…' }).click();
    await page.waitForURL((u) => u.pathname === page$ + '/delete');
    await expectStatus(200, 'GET', jobPath(sub, rg, coll, job));
    await submit(page, 'Delete the job');
    assert.equal(new URL(page.url()).pathname, consolePath(sub, rg, coll));
    assert.match(await page.locator('.flash').textContent(), /deleted/);
    await expectStatus(404, 'GET', jobPath(sub, rg, coll, job));
    assert.match(await page.locator('#jobs').textContent(), /No job matches/);
  } finally {
    await endpoint.close();
  }
});
