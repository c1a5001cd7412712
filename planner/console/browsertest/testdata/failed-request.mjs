// A page with an image Chromium cannot fetch (it refuses port 9): the
// scenario fails though it asserts nothing.
import { run } from '../lib.mjs';

await run(async ({ page }) => {
  await page.setContent('<main><h1>x</h1><img src="http://127.0.0.1:9/unreachable.png"></main>');
});
