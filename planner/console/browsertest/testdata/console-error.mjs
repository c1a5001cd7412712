// A page that logs a console error: the scenario fails though it asserts nothing.
import { run } from '../lib.mjs';

await run(async ({ page }) => {
  await page.setContent('<main><h1>x</h1><script>console.error("the page logged this")</script></main>');
});
