// Bundled by the e2e harness into a classic script that puts the `openai` package on
// `window.OpenAI`, so tests run the real SDK inside the page against Hearth's /v1.
import OpenAI from 'openai';

(globalThis as unknown as { OpenAI: typeof OpenAI }).OpenAI = OpenAI;
