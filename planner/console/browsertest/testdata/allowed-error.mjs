// A console error the scenario expects, named with allow(): it passes.
import { run } from '../lib.mjs';

await run(async ({ page, allow }) => {
  allow(/the page logged this/);
  await page.setContent('<main><h1>x</h1><script>console.error("the page logged this")</script></main>');
});
