// With a token file, the console sends a visitor to the sign-in page,
// refuses a token the API does not know, and shows the overview once
// signed in with a token it accepts.
import { assert, open, run, screenshot, signIn, tokens } from './lib.mjs';

await run(async ({ page }) => {
  await open(page, '/');
  assert.equal(new URL(page.url()).pathname, '/login', 'a visitor without a session is not sent to /login');
  assert.equal((await page.locator('h1').textContent()).trim(), 'Sign in');
  await screenshot(page, 'sign-in');

  await signIn(page, 'not-a-token-the-api-knows-of-at-all-0123456789');
  assert.equal(new URL(page.url()).pathname, '/login', 'an unknown token left the sign-in page');
  assert.match(await page.locator('main [role="alert"]').textContent(), /not accepted/);

  await signIn(page, tokens.reader);
  assert.equal(new URL(page.url()).pathname, '/', 'signing in did not lead back to the overview');
  assert.equal((await page.locator('h1').textContent()).trim(), 'Overview');
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 1, 'no way to sign out once signed in');
});
