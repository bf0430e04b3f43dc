// The chat page's refusals, run by web/chatstory_test.go
// (TestBrowserChatErrors): each is said as a sentence with a way on. The
// server behind NO_MODEL_URL has no model configured (a clerk is told to
// ask an administrator, the administrator which settings to set);
// CONTROL_URL ends the clerk's sessions.
import assert from "node:assert/strict";
import { env, launch, log, shot, signIn, watch } from "./lib.mjs";

const BASE = env("BASE_URL");
const NO_MODEL = env("NO_MODEL_URL");
const CONTROL = env("CONTROL_URL");
const OUT = env("OUT_DIR");
const PASSWORD = env("PASSWORD");
const CLERK = env("CLERK");
const ADMIN = env("ADMIN");

const browser = await launch();
try {
  const errors = [];
  // The page asks for a running answer (GET …/stream) as it mounts; a
  // send may be refused before that request answers. Holding it until
  // after the refusal makes that order certain: its late 204 must not
  // take the refusal's sentence away.
  let release = () => {};
  const open = async (base, user = CLERK) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const held = new Promise((resolve) => (release = resolve));
    await context.route(/\/v1\/chat\/[^/]+\/stream$/, async (route) => {
      await held;
      await route.continue();
    });
    const page = await context.newPage();
    watch(page, errors);
    await signIn(page, base, user, PASSWORD, "/chat");
    return page;
  };
  const answerResume = async (page) => {
    const answered = page.waitForResponse((r) => /\/v1\/chat\/[^/]+\/stream$/.test(r.url()));
    release();
    assert.equal((await answered).status(), 204);
  };
  const send = async (page, text) => {
    const box = page.getByLabel("Message", { exact: true });
    await box.fill(text);
    await box.press("Enter");
  };
  // A refused first message made no conversation, so the address stays
  // /chat: a reload opens a new chat, not a 404 for an id never stored.
  const stillNew = async (page) => {
    assert.equal(new URL(page.url()).pathname, "/chat");
    const reloaded = await page.reload();
    assert.equal(reloaded.status(), 200);
    await page.getByLabel("Message", { exact: true }).waitFor();
  };

  // 503: no model configured.
  let page = await open(NO_MODEL);
  await send(page, "Hello?");
  let alert = page.getByRole("alert");
  await alert.waitFor();
  await answerResume(page);
  // Nothing was stored: the message is back in the box, not in the list.
  assert.equal(await page.getByLabel("Message", { exact: true }).inputValue(), "Hello?");
  assert.equal(await page.locator("li.msg").count(), 0);
  // A clerk reads whom to ask, never a setting's name.
  assert.equal(await alert.innerText(), "The assistant is not set up on this server yet. Ask an administrator to set it up; the inbox and the invoices work meanwhile.");
  assert.doesNotMatch(await page.locator("body").innerText(), /INVOICED_/);
  assert.equal(await alert.getByRole("button").count(), 0, "nothing to retry until a model is set");
  await shot(page, OUT, "chat-error-503.png", { fullPage: false });
  await stillNew(page);
  // The administrator who would set it up reads which settings.
  page = await open(NO_MODEL, ADMIN);
  await send(page, "Hello?");
  alert = page.getByRole("alert");
  await alert.waitFor();
  await answerResume(page);
  assert.match(await alert.innerText(), /^The assistant is not set up on this server\. No model is configured: set INVOICED_MODEL_PROVIDER=.* The inbox and the invoices work meanwhile\.$/s);
  log("503 said, to a clerk and to an admin");

  // 422: a message over the limit names it, and the way on.
  page = await open(BASE);
  await send(page, "x".repeat(70 * 1024));
  alert = page.getByRole("alert");
  await alert.waitFor();
  await answerResume(page);
  assert.equal(await alert.innerText(), "Your message is longer than 65536 bytes. It is back in the box below: shorten it, or send it in parts.");
  assert.equal((await page.getByLabel("Message", { exact: true }).inputValue()).length, 70 * 1024);
  assert.equal(await page.locator("li.msg").count(), 0);
  await shot(page, OUT, "chat-error-422.png", { fullPage: false });
  await stillNew(page);
  log("422 said");

  // 401: the session ended meanwhile.
  await page.getByLabel("Message", { exact: true }).fill("");
  await (await fetch(`${CONTROL}/signout`, { method: "POST" })).text();
  await send(page, "Still there?");
  alert = page.getByRole("alert");
  await alert.getByText("Your session has ended. Sign in again to go on; the conversation is kept.").waitFor();
  await alert.getByRole("button", { name: "Sign in again" }).click();
  await page.waitForURL(/\/login\?next=%2Fchat/);
  log("401 said");

  // Only the refused requests themselves may show in the console.
  assert.deepEqual(errors.filter((e) => !/Failed to load resource: the server responded with a status of (401|422|503)/.test(e)), []);
} finally {
  await browser.close();
}
