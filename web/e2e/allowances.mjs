// Browser test of the standing allowances in the back office, run by
// web/allowances_test.go: the approver's inbox with an allowance in force
// and its revoke form, the invoice pages that say what an issue was
// issued under, and revoking from the inbox; axe-core checks each page,
// and each must fit 360 px without scrolling sideways.
import assert from "node:assert/strict";
import { axe, env, launch, log, noHorizontalScroll, shot as shotIn, signIn, watch } from "./lib.mjs";

const BASE = env("BASE_URL");
const OUT = env("OUT_DIR");
const PASSWORD = env("PASSWORD");
const APPROVER = env("APPROVER");
const ALLOWANCE = env("ALLOWANCE_ID");
const ON_APPROVAL = env("ON_APPROVAL_ID");
const UNDER_ALLOWANCE = env("UNDER_ALLOWANCE_ID");

const shot = (page, name) => shotIn(page, OUT, name);

// check runs axe on the page at 1280 px and at 360 px, where it must not
// scroll sideways.
async function check(page, label, name) {
  await axe(page, label);
  await shot(page, `${name}.png`);
  await page.setViewportSize({ width: 360, height: 780 });
  await noHorizontalScroll(page, `${label} at 360px`);
  await axe(page, `${label} at 360px`);
  await shot(page, `${name}-360.png`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

const browser = await launch();
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  watch(page, errors);
  await signIn(page, BASE, APPROVER, PASSWORD);

  const row = page.locator(`[data-allowance-id="${ALLOWANCE}"]`);
  await row.waitFor();
  await check(page, "/inbox with an allowance in force", "inbox-allowance");

  await page.goto(`${BASE}/invoices/${UNDER_ALLOWANCE}`);
  assert.match(await page.locator("#issued-under").innerText(), /^Issued under standing allowance /);
  await check(page, "an invoice issued under an allowance", "invoice-allowance");

  await page.goto(`${BASE}/invoices/${ON_APPROVAL}`);
  await page.getByRole("link", { name: /^approval / }).waitFor();
  await check(page, "an invoice issued on approval", "invoice-approval");

  await page.goto(`${BASE}/inbox`);
  await row.getByLabel("Reason (optional)").fill("The run is done.");
  await row.getByRole("button", { name: "Revoke" }).click();
  await page.waitForURL(`${BASE}/inbox?done=revoked`);
  await page.getByText("The allowance is revoked").waitFor();
  assert.equal(await row.count(), 0, "the revoked allowance is no longer listed");
  await check(page, "/inbox after a revoke", "inbox-revoked");
  assert.deepEqual(errors, [], "no console errors (CSP violations included)");
  log("ok");
} finally {
  await browser.close();
}
