// zod (ai's schemas) compiles validators with `new Function` when the page
// allows it and probes by trying; under our CSP (no 'unsafe-eval') the probe
// itself is reported as a violation. jitless skips the probe. Imported
// first, so it is set before any schema runs.
import { config } from 'zod';

config({ jitless: true });
