// A forged request is refused: a page of another origin whose form posts
// to a job's run while the viewer is signed in answers 403, and so does a
// POST of the viewer's own session without the csrf value. Neither runs
// the job; the session's own form does.
import { createServer } from 'node:http';
import {
  assert, consolePath, createCollection, createJob, csrfOf, expectStatus, history, httpAction, jobPath, open, run, signIn, target,
  tokens, until,
} from './lib.mjs';

const [sub, rg, coll, job] = ['dev', 'forgery', 'payments', 'payout'];
const job$ = consolePath(sub, rg, coll, job);

// forger serves, on another origin, a page whose form posts to action as
// soon as it loads.
async function forger(action) {
  const html = `<!doctype html><title>Win a prize</title>
<form method="post" action="${action}"><input type="hidden" name="csrf" value="guessed"></form>
<script>document.forms[0].submit()</script>`;
  const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

await run(async ({ page, url, allow }) => {
  const endpoint = await target();
  const evil = await forger(url(job$ + '/run'));
  try {
    // The refused POST is the page Chromium then shows, a 403 it logs.
    allow(/status of 403 \(Forbidden\) \(http:\/\/[^)]+\/jobs\/payout\/run\)/);
    const writer = tokens.writer;
    await createCollection(sub, rg, coll, writer);
    const startTime = new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await createJob(sub, rg, coll, job, { startTime, action: { ...httpAction(endpoint.url), retryPolicy: { retryType: 'None' } },
      recurrence: { frequency: 'Day', interval: 1 } }, writer);
    await open(page, job$);
    await signIn(page, writer);
    assert.equal(new URL(page.url()).pathname, job$);
    const csrf = await csrfOf(page);

    // The other origin's page, visited while signed in.
    const [forged] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === url(job$ + '/run')),
      page.goto(evil.url),
    ]);
    assert.equal(forged.status(), 403, 'the forged form was not refused');
    await page.waitForURL(url(job$ + '/run'));
    assert.match(await page.locator('main [role="alert"]').textContent(), /sent from another site is refused/);

    // The session's own cookie, without the csrf value.
    const bare = await page.request.post(job$ + '/run', { form: { note: 'no csrf' }, maxRedirects: 0 });
    assert.equal(bare.status(), 403, 'a POST without the csrf value was not refused');
    assert.match(await bare.text(), /did not come from a page of this console/);
    const wrong = await page.request.post(job$ + '/run', { form: { csrf: csrf.slice(1) + 'x' }, maxRedirects: 0 });
    assert.equal(wrong.status(), 403, 'a POST with another csrf value was not refused');

    // The same POST with the csrf value runs the job: once, the only run.
    const genuine = await page.request.post(job$ + '/run', { form: { csrf }, maxRedirects: 0 });
    assert.equal(genuine.status(), 303, 'the session\'s own form was refused');
    await until('the genuine run is in the history', async () => (await history(sub, rg, coll, job, writer)).length === 1);
    assert.equal(endpoint.requests.length, 1, 'the endpoint was called more than once');
    const { properties } = await expectStatus(200, 'GET', jobPath(sub, rg, coll, job), { token: writer });
    assert.equal(properties.status.executionCount, 1);
  } finally {
    await evil.close();
    await endpoint.close();
  }
});
