// The editor checks a draft as it is typed and shows each problem at its
// field; a fixed draft shows its next runs and creates the job. Editing a
// job with a Basic password changes what the draft changes and keeps the
// password, which the page never shows.
import {
  assert, consolePath, createCollection, createJob, expectStatus, httpAction, jobPath, open, run, screenshot, submit, target,
  until,
} from './lib.mjs';

const [sub, rg, coll] = ['dev', 'editor', 'exports'];
const startTime = new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');

const draft = (uri) => `{
  "properties": {
    "startTime": "${startTime}",
    "action": {
      "type": "Https",
      "request": {
        "method": "POST",
        "uri": "${uri}"
      }
    },
    "recurrence": {"frequency": "Week", "interval": 1, "schedule": {"weekDays": ["Monday"], "hours": [6], "minutes": [30]}, "timeZone": "Europe/Berlin"}
  }
}`;

await run(async ({ page }) => {
  await createCollection(sub, rg, coll);

  // A new job: the problem appears at its field, with its line.
  await open(page, consolePath(sub, rg, coll) + '/new');
  await page.locator('#job').fill('weekly-export');
  await page.locator('#body').fill(draft('not a url'));
  const problem = page.locator('#check li[data-field="properties.action.request.uri"]');
  await problem.waitFor({ timeout: 5_000 });
  assert.match(await problem.textContent(), /must be an absolute http or https URI/);
  assert.equal(await problem.locator('a.line').getAttribute('data-line'), '8', 'the problem does not link to the line of the uri');
  assert.equal(await page.locator('#check li').count(), 1, 'the draft has one problem only');
  await screenshot(page, 'editor');
  // The line link selects the line in the definition.
  await problem.locator('a.line').click();
  assert.match(await page.evaluate(() => {
    const area = document.getElementById('body');
    return area.value.slice(area.selectionStart, area.selectionEnd);
  }), /"uri": "not a url"/);

  // Fixed: the problems go, the next runs come.
  await page.locator('#body').fill(draft('https://example.com/export'));
  await page.waitForSelector('#check ol.runs li');
  assert.equal(await page.locator('#check .faults').count(), 0, 'the fixed draft still shows problems');
  assert.match(await page.locator('#check ol.runs li').first().textContent(), /06:30:00 \+01:00 CET/);
  await submit(page, 'Create');
  assert.equal(new URL(page.url()).pathname, consolePath(sub, rg, coll, 'weekly-export'));
  assert.match(await page.locator('.flash').textContent(), /created/);
  const created = await expectStatus(200, 'GET', jobPath(sub, rg, coll, 'weekly-export'));
  assert.equal(created.properties.action.request.uri, 'https://example.com/export');
  assert.equal(created.properties.recurrence.timeZone, 'Europe/Berlin');

  // A job with a Basic password: the editor changes its method and keeps
  // its password.
  const endpoint = await target();
  try {
    const password = 'correct horse battery staple';
    await createJob(sub, rg, coll, 'nightly-sync', {
      startTime,
      action: { ...httpAction(endpoint.url + 'sync', 'GET', { authentication: { type: 'Basic', username: 'sync', password } }), retryPolicy: { retryType: 'None' } },
      recurrence: { frequency: 'Day', interval: 1 },
    });
    const job$ = consolePath(sub, rg, coll, 'nightly-sync');
    await open(page, job$);
    const secrets = page.locator('table.secrets tbody tr');
    assert.equal(await secrets.count(), 1);
    assert.equal((await secrets.locator('th').textContent()).trim(), 'action.request.authentication.password');
    assert.equal((await secrets.locator('td').textContent()).trim(), 'set');
    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await page.waitForURL((u) => u.pathname === job$ + '/edit');
    const body = await page.locator('#body').inputValue();
    assert.ok(!body.includes(password), 'the editor shows the password');
    assert.match(await page.locator('main').textContent(), /Kept: action\.request\.authentication\.password\./);
    assert.match(body, /"method": "GET"/);
    await page.locator('#body').fill(body.replace('"method": "GET"', '"method": "PUT"'));
    await page.waitForFunction(() => /stored secrets are kept/.test(document.getElementById('check').textContent));
    await submit(page, 'Save');
    assert.equal(new URL(page.url()).pathname, job$);
    assert.match(await page.locator('.flash').textContent(), /saved/);
    const saved = await expectStatus(200, 'GET', jobPath(sub, rg, coll, 'nightly-sync'));
    assert.equal(saved.properties.action.request.method, 'PUT');
    assert.equal(saved.properties.action.request.authentication.username, 'sync');
    assert.equal(saved.properties.action.request.authentication.password, undefined, 'the API shows the password');
    assert.equal((await secrets.locator('td').textContent()).trim(), 'set', 'saving forgot the password');

    // The run sends the password the job was created with.
    await submit(page, 'Run now');
    await until('the endpoint was called', () => endpoint.requests.length === 1);
    assert.equal(endpoint.requests[0].method, 'PUT');
    assert.equal(endpoint.requests[0].authorization, 'Basic ' + Buffer.from(`sync:${password}`).toString('base64'));
  } finally {
    await endpoint.close();
  }
});
