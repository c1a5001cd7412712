// A page whose script throws: the scenario fails though it asserts nothing.
import { run } from '../lib.mjs';

await run(async ({ page }) => {
  await page.setContent('<main><h1>x</h1><script>throw new Error("the page threw this")</script></main>');
});
