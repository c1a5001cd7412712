// Each page of the console renders over jobs created through the API: the
// overview lists the collection with its jobs by state and draws the
// upcoming chart; the collection page lists the jobs, and its name and
// state filters narrow the table in place (htmx, no reload); the job page,
// the editor and the delete confirmation show the job.
import {
  assert, collectionPath, consolePath, createCollection, createJob, expectStatus, httpAction, jobPath, open, run, screenshot,
} from './lib.mjs';

const [sub, rg, coll] = ['dev', 'pages', 'reports'];
// The jobs start in ten minutes: nothing runs while the scenario looks.
const startTime = new Date(Date.now() + 10 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
const every = (minutes) => ({ frequency: 'Minute', interval: minutes });

await run(async ({ page }) => {
  await createCollection(sub, rg, coll);
  await createJob(sub, rg, coll, 'alpha-report', { action: httpAction('https://example.com/alpha'), startTime, recurrence: every(20) });
  await createJob(sub, rg, coll, 'beta-report', { action: httpAction('https://example.com/beta', 'POST'), startTime, recurrence: every(60) });
  await createJob(sub, rg, coll, 'gamma-sync', { action: httpAction('https://example.com/gamma'), startTime, recurrence: every(120), state: 'Disabled' });

  // The overview: the collection with its counts, and the chart.
  await open(page, '/');
  const row = page.locator('tr', { has: page.locator(`a[href="${consolePath(sub, rg, coll)}"]`) });
  assert.equal(await row.count(), 1, 'the overview does not list the collection');
  const cells = (await row.locator('td').allTextContents()).map((s) => s.trim());
  assert.deepEqual(cells, [`${sub} / ${rg}`, 'Enabled', 'Standard', '2', '1', '0', '0'],
    'the overview\'s row: subscription / resource group, state, plan, Enabled, Disabled, Completed, Faulted');
  assert.equal(await page.locator('figure.chart svg').count(), 1, 'the overview has no upcoming chart');
  assert.ok(await page.locator('figure.chart svg rect.bar').count() > 0, 'the chart has no bar for the runs due');
  assert.ok(await page.getByRole('link', { name: `${coll} / alpha-report` }).count() > 0, 'the upcoming runs do not list alpha-report');
  await screenshot(page, 'overview');
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot(page, 'overview-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // The collection page and its filters.
  await open(page, consolePath(sub, rg, coll));
  const names = () => page.locator('#jobs table.jobs tbody th a').allTextContents();
  assert.deepEqual(await names(), ['alpha-report', 'beta-report', 'gamma-sync']);
  assert.equal((await page.locator('h1').textContent()).trim(), coll);
  await screenshot(page, 'collection');
  // A mark on the window: a full reload would lose it.
  await page.evaluate(() => { window.sameDocument = true; });
  const shows = async (want, what) => {
    await page.waitForFunction((want) => {
      const got = [...document.querySelectorAll('#jobs table.jobs tbody th a')].map((a) => a.textContent.trim());
      return JSON.stringify(got) === JSON.stringify(want) || (want.length === 0 && !document.querySelector('#jobs table.jobs'));
    }, want);
    assert.ok(await page.evaluate(() => window.sameDocument === true), `${what} reloaded the page`);
  };
  await page.locator('#q').pressSequentially('report');
  await shows(['alpha-report', 'beta-report'], 'typing in the name filter');
  await page.waitForURL((u) => u.searchParams.get('q') === 'report');
  await page.locator('#q').fill('');
  await shows(['alpha-report', 'beta-report', 'gamma-sync'], 'clearing the name filter');
  await page.locator('#state').selectOption('Disabled');
  await shows(['gamma-sync'], 'choosing a state');
  assert.match(await page.locator('#jobs [role="status"]').textContent(), /1 job matches/);
  await page.locator('#state').selectOption('Completed');
  await shows([], 'choosing a state no job is in');
  assert.match(await page.locator('#jobs').textContent(), /No job matches/);
  // The filtered page is also a page of its own.
  await open(page, consolePath(sub, rg, coll) + '?state=Enabled&q=beta');
  assert.deepEqual(await names(), ['beta-report']);

  // The job page.
  await page.getByRole('link', { name: 'beta-report' }).click();
  await page.waitForURL((u) => u.pathname === consolePath(sub, rg, coll, 'beta-report'));
  assert.equal((await page.locator('h1').textContent()).trim(), 'beta-report');
  assert.equal((await page.locator('#job-state').textContent()).trim(), 'Enabled');
  assert.equal(await page.locator('#h-next + .scroll table tbody tr').count(), 10, 'the job page does not show its next 10 runs');
  assert.match(await page.locator('pre.json').textContent(), /https:\/\/example\.com\/beta/);
  assert.match(await page.locator('#history').textContent(), /No history yet/);

  // The editor of a new job: it opens with a draft that checks valid.
  await open(page, consolePath(sub, rg, coll) + '/new');
  assert.equal((await page.locator('h1').textContent()).trim(), `New job in ${coll}`);
  await page.locator('#job').fill('delta');
  await page.waitForSelector('#check ol.runs li');

  // The edit page and the delete confirmation of a job; looking changes
  // nothing.
  await open(page, consolePath(sub, rg, coll, 'gamma-sync') + '/edit');
  assert.equal((await page.locator('h1').textContent()).trim(), 'Edit gamma-sync');
  assert.match(await page.locator('#body').inputValue(), /"state": "Disabled"/);
  await open(page, consolePath(sub, rg, coll, 'gamma-sync') + '/delete');
  assert.equal((await page.locator('h1').textContent()).trim(), 'Delete gamma-sync?');
  assert.equal(await page.getByRole('button', { name: 'Delete the job' }).count(), 1);
  assert.equal(await page.getByRole('link', { name: 'Keep it' }).count(), 1);
  await expectStatus(200, 'GET', jobPath(sub, rg, coll, 'gamma-sync'));
  await expectStatus(200, 'GET', collectionPath(sub, rg, coll));
});
