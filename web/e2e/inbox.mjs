// Browser test of the back-office inbox, run by web/browser_test.go, which
// starts the service, creates the users and the first approval request,
// and serves CONTROL_URL for the steps only the Go side can take (creating
// a second request through the gate, making the issue call).
import assert from "node:assert/strict";
import { env, launch, log, noHorizontalScroll, shot as shotIn, signIn as signInAt, watch } from "./lib.mjs";

const BASE = env("BASE_URL");
const CONTROL = env("CONTROL_URL");
const OUT = env("OUT_DIR");
const FIRST = env("FIRST_ID");
const PASSWORD = env("PASSWORD");
const APPROVER = env("APPROVER");
const CLERK = env("CLERK");
const want = JSON.parse(env("EXPECT"));

async function control(step) {
  const r = await fetch(`${CONTROL}/${step}`, { method: "POST" });
  const body = await r.json();
  if (!r.ok) throw new Error(`control ${step}: ${r.status} ${JSON.stringify(body)}`);
  return body;
}

const shot = (page, name) => shotIn(page, OUT, name);
const signIn = (page, user) => signInAt(page, BASE, user, PASSWORD);

const browser = await launch();
try {
  // --- The approver ---------------------------------------------------
  const approverCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await approverCtx.newPage();
  const errors = [];
  watch(page, errors);
  await signIn(page, APPROVER);

  const row = page.locator(`[data-live-region="pending"] [data-request-id="${FIRST}"]`);
  await row.waitFor();
  const rowText = await row.innerText();
  assert.match(rowText, new RegExp(`Issue invoice for ${want.customer} — ${want.total.replace(/[.]/g, "\\.")} EUR`));
  assert.match(rowText, new RegExp(`Agent\\s+for ${CLERK}`));
  assert.match(rowText, new RegExp(want.total.replace(/[.]/g, "\\.")));
  assert.match(rowText, /0 of 1/);
  await page.locator("#live-status", { hasText: "Live:" }).waitFor();
  await shot(page, "inbox.png");

  await row.getByRole("link", { name: new RegExp(`^Issue invoice for ${want.customer}`) }).click();
  await page.waitForURL(`${BASE}/approvals/${FIRST}`);
  assert.equal((await page.locator("#subtotal").innerText()).trim(), want.subtotal);
  assert.equal((await page.locator("#tax-total").innerText()).trim(), want.tax);
  assert.equal((await page.locator("#total").innerText()).trim(), want.total);
  assert.ok(await page.getByText(want.customer).first().isVisible());
  assert.ok(await page.getByText(`next in series ${want.series}`).isVisible());
  // The draft's PDF as it will be issued, fetched with the session's cookie.
  const pdfLink = page.getByRole("link", { name: "PDF as it will be issued" });
  const pdf = await page.request.get(new URL(await pdfLink.getAttribute("href"), BASE).href);
  assert.equal(pdf.status(), 200);
  assert.equal(pdf.headers()["content-type"], "application/pdf");
  assert.equal((await pdf.body()).subarray(0, 5).toString("latin1"), "%PDF-");
  await shot(page, "request.png");

  // The same page at 360 px: nothing scrolls sideways.
  await page.setViewportSize({ width: 360, height: 780 });
  await noHorizontalScroll(page, "request page at 360px");
  await shot(page, "request-360.png");
  await page.setViewportSize({ width: 1280, height: 900 });

  // Keyboard: Tab from the top reaches the Approve button.
  await page.locator("body").focus();
  let reached = false;
  for (let i = 0; i < 40 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement && document.activeElement.textContent.trim() === "Approve");
  }
  assert.ok(reached, "the Approve button is reachable with the keyboard");

  await page.getByLabel("Note (optional)").fill("Checked against the purchase order.");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(`${BASE}/approvals/${FIRST}?done=approve`);
  await page.getByText("You approved this request.").waitFor();
  assert.equal(await page.getByRole("button", { name: "Approve" }).count(), 0);
  log("approved", FIRST);

  // The issue call the agent retries now succeeds.
  const issued = await control("issue");
  assert.equal(issued.status, "issued");
  assert.match(issued.number, new RegExp(`^${want.series}-\\d{4}-000001$`));
  log("issued", issued.number);

  // The issued invoice in the list, and its printable view.
  await page.goto(`${BASE}/invoices?status=issued`);
  const link = page.getByRole("link", { name: issued.number });
  await link.click();
  await page.getByRole("heading", { name: new RegExp(`Invoice ${issued.number}`) }).waitFor();
  await page.emulateMedia({ media: "print" });
  assert.equal(await page.locator("header.top").isVisible(), false, "print hides the navigation");
  await shot(page, "invoice-print.png");
  await page.emulateMedia({ media: "screen" });

  // --- Live update: a second request appears without reload -------------
  await page.goto(`${BASE}/inbox`);
  await page.locator("#live-status", { hasText: "Live:" }).waitFor();
  await page.evaluate(() => { window.__sameDocument = true; });
  const second = await control("second");
  const live = page.locator(`[data-live-region="pending"] [data-request-id="${second.id}"]`);
  await live.waitFor({ timeout: 10000 });
  assert.equal(await page.evaluate(() => window.__sameDocument === true), true, "the page was not reloaded");
  assert.match(await live.innerText(), new RegExp(`Agent\\s+for ${CLERK}`));
  const recent = page.locator(`[data-live-region="recent"] [data-request-id="${FIRST}"]`);
  assert.match(await recent.innerText(), /consumed|approved/);
  await shot(page, "inbox-live.png");
  await page.setViewportSize({ width: 360, height: 780 });
  await noHorizontalScroll(page, "inbox at 360px");
  await shot(page, "inbox-360.png");
  assert.deepEqual(errors, [], "no console errors (CSP violations included)");

  // --- The clerk, on their own request ----------------------------------
  const clerkCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const cpage = await clerkCtx.newPage();
  const cerrors = [];
  watch(cpage, cerrors);
  await signIn(cpage, CLERK);
  await cpage.goto(`${BASE}/approvals/${second.id}`);
  await cpage.locator("#cannot-decide").waitFor();
  assert.equal(await cpage.getByRole("button", { name: "Approve" }).count(), 0);
  assert.equal(await cpage.getByRole("button", { name: "Deny" }).count(), 0);
  assert.equal(await cpage.locator(`form[action$="/approve"], form[action$="/deny"]`).count(), 0);
  await shot(cpage, "clerk-request.png");

  // Sign out, then the old page's links lead to sign-in.
  await cpage.getByRole("button", { name: "Sign out" }).click();
  await cpage.waitForURL(/\/login\?signed_out=1$/);
  await cpage.goto(`${BASE}/inbox`);
  assert.match(cpage.url(), /\/login\?next=/);
  assert.deepEqual(cerrors, [], "no console errors for the clerk");
  log("ok");
} finally {
  await browser.close();
}
