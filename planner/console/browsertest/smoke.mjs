// The overview at / answers 200 with a page that has a <main> and an <h1>
// (the screenshot of the overview, with jobs, is pages.mjs's).
import { assert, open, run } from './lib.mjs';

await run(async ({ page }) => {
  const res = await open(page, '/');
  assert.match(res.headers()['content-type'] || '', /^text\/html/, 'the overview is not HTML');
  assert.equal(await page.locator('main').count(), 1, 'the overview has no <main>');
  const h1 = page.locator('h1');
  assert.ok((await h1.count()) >= 1, 'the overview has no <h1>');
  console.log(`h1: ${(await h1.first().textContent()).trim()}`);
});
