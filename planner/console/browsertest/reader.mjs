// A reader sees no action on the job and collection pages, where a writer
// sees them all; a run the reader's session asks for anyway, with its
// valid csrf value, answers an error page and the job does not run.
import {
  actionNames, api, assert, consolePath, createCollection, createJob, csrfOf, expectStatus, history, httpAction, jobPath, open,
  run, signIn, submit, target, tokens, until,
} from './lib.mjs';

const [sub, rg, coll, job] = ['dev', 'access', 'ops', 'ping'];
const job$ = consolePath(sub, rg, coll, job);
const coll$ = consolePath(sub, rg, coll);
const jobActions = ['Run now', 'Disable', 'Enable', 'Edit', 'Delete…'];
const collectionActions = ['New job', 'Disable the collection', 'Enable the collection'];

await run(async ({ page, allow }) => {
  const endpoint = await target();
  try {
    // The refused editor is a page of status 403, which Chromium logs.
    allow(/status of 403 \(Forbidden\) \(http:\/\/[^)]+\/ops\/new\)/);
    const writer = tokens.writer;
    await createCollection(sub, rg, coll, writer);
    const startTime = new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await createJob(sub, rg, coll, job, { startTime, action: { ...httpAction(endpoint.url), retryPolicy: { retryType: 'None' } },
      recurrence: { frequency: 'Day', interval: 1 } }, writer);

    // The writer sees the actions.
    await open(page, job$);
    await signIn(page, writer);
    assert.equal(new URL(page.url()).pathname, job$);
    assert.deepEqual((await actionNames(page)).filter((n) => jobActions.includes(n)), ['Run now', 'Disable', 'Edit', 'Delete…']);
    await open(page, coll$);
    assert.deepEqual((await actionNames(page)).filter((n) => collectionActions.includes(n)), ['New job', 'Disable the collection']);
    await submit(page, 'Sign out');
    assert.equal(new URL(page.url()).pathname, '/login');

    // The reader sees none.
    await open(page, job$);
    await signIn(page, tokens.reader);
    assert.equal(new URL(page.url()).pathname, job$);
    assert.equal((await page.locator('h1').textContent()).trim(), job);
    assert.deepEqual((await actionNames(page)).filter((n) => jobActions.includes(n)), [], 'the reader is offered actions on the job');
    await open(page, coll$);
    assert.equal(await page.locator('#jobs table.jobs tbody tr').count(), 1);
    assert.deepEqual((await actionNames(page)).filter((n) => collectionActions.includes(n)), [], 'the reader is offered actions on the collection');
    const refused = await open(page, coll$ + '/new', 403);
    assert.match(await refused.text(), /does not allow creating jobs/);

    // A run asked for anyway, with the session's own csrf value.
    await open(page, job$);
    const csrf = await csrfOf(page);
    const res = await page.request.post(job$ + '/run', { form: { csrf }, maxRedirects: 0 });
    assert.equal(res.status(), 403, 'the reader\'s run was not refused');
    assert.match(await res.text(), /<p class="error" role="alert">[^<]+<\/p>/);
    const upcoming = await expectStatus(200, 'GET', jobPath(sub, rg, coll, job) + '/upcoming?hours=168', { token: writer });
    assert.deepEqual(upcoming.value.filter((r) => r.kind !== 'Scheduled'), [], 'a run is pending after the refusal');
    assert.equal((await api('POST', jobPath(sub, rg, coll, job) + '/run', { token: tokens.reader })).status, 403);

    // The writer's run, after: the only one the endpoint and the history see.
    await expectStatus(200, 'POST', jobPath(sub, rg, coll, job) + '/run', { token: writer });
    await until('the writer\'s run is in the history', async () => (await history(sub, rg, coll, job, writer)).length === 1);
    assert.equal(endpoint.requests.length, 1, 'the endpoint was called more than once');
    const { properties } = await expectStatus(200, 'GET', jobPath(sub, rg, coll, job), { token: writer });
    assert.equal(properties.status.executionCount, 1);
  } finally {
    await endpoint.close();
  }
});
