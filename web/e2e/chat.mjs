// Browser story of the chat page (issue 16), run by web/chatstory_test.go,
// which starts the service behind a fake OpenAI-compatible model (its
// answers are chatStory.answer), creates the clerk, the approver and a
// draft for Globex Corporation, and checks the database afterwards. The
// clerk and the approver each have a browser context. Prints one JSON line
// for the Go side: the invoice number the clerk read and the approval id.
import assert from "node:assert/strict";
import { axe, env, launch, log, noHorizontalScroll, shot as shotIn, signIn, watch } from "./lib.mjs";

const BASE = env("BASE_URL");
const OUT = env("OUT_DIR");
const PASSWORD = env("PASSWORD");
const CLERK = env("CLERK");
const APPROVER = env("APPROVER");

// The chat is pictured as the clerk sees it: the window, scrolled to the
// newest message.
const shot = async (page, name) => {
  if (page.url().includes("/chat")) {
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    return shotIn(page, OUT, name, { fullPage: false });
  }
  return shotIn(page, OUT, name);
};
const browser = await launch();
const viewport = { width: 1280, height: 900 };

try {
  const clerkCtx = await browser.newContext({ viewport });
  const page = await clerkCtx.newPage();
  const errors = [];
  watch(page, errors);
  await signIn(page, BASE, CLERK, PASSWORD, "/chat");
  await page.getByRole("heading", { name: "Ask the assistant" }).waitFor();
  await page.getByText("None yet.").waitFor();
  await axe(page, "/chat, a new conversation");

  const composer = page.getByLabel("Message", { exact: true });
  const send = async (text) => {
    await composer.fill(text);
    await composer.press("Enter");
  };
  // Ready: no answer is being written (Send replaces Stop).
  const ready = () => page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20000 });
  const answer = () => page.locator("li.msg-assistant").last();
  // tabTo moves the focus back from the message box with Shift+Tab until
  // the button named name has it: the way a keyboard user gets there.
  const tabTo = async (name) => {
    await composer.focus();
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press("Shift+Tab");
      if (await page.evaluate((n) => document.activeElement?.tagName === "BUTTON" && document.activeElement.textContent.trim() === n, name)) return;
    }
    assert.fail(`${name} is not reachable with the keyboard`);
  };
  const noAlert = async (step) => assert.equal(await page.getByRole("alert").count(), 0, `${step}: no error shown`);

  // 1. A read tool, then the answer.
  await send("Which invoices are still drafts?");
  await page.waitForURL(/\/chat\/[A-Za-z0-9_-]+$/);
  const conversation = page.url().split("/").pop();
  const tool = answer().locator('[data-tool="list-invoices"]');
  await tool.waitFor();
  await answer().getByText("There is one draft").waitFor();
  await ready();
  assert.equal(await tool.getAttribute("data-state"), "output-available");
  assert.match(await tool.innerText(), /Looked up invoices: 1 found/);
  const order = await page.evaluate(() => {
    const m = [...document.querySelectorAll("li.msg-assistant")].at(-1);
    const t = m.querySelector('[data-tool="list-invoices"]'), a = m.querySelector(".md");
    return Boolean(t.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  assert.ok(order, "the tool part comes before the answer");
  const reasoning = answer().locator("details.reasoning");
  assert.equal(await reasoning.evaluate((d) => d.open), false, "reasoning is collapsed");
  assert.match(await answer().locator(".usage").innerText(), /^fake-model · \d+ tokens in, \d+ out · \d{1,2}:\d\d(\s?[AP]M)?$/);
  await page.getByText("The assistant says: There is one draft").waitFor({ state: "attached" });
  assert.equal(await page.locator('[aria-live="polite"]', { hasText: "The assistant says: There is one draft" }).count(), 1, "the answer is announced");
  await page.locator(".conv-list").getByRole("link", { name: /Which invoices are still drafts\?/ }).waitFor();
  await noAlert("read");
  await shot(page, "chat-1-read.png");
  log("1 read tool then answer");

  // 2. Issuing needs an approver: a card waits for one.
  await send("Please issue the Globex draft.");
  await answer().locator(".approval-card").waitFor();
  const approvalId = await answer().locator(".approval-card").getAttribute("data-approval-id");
  const card = page.locator(`.approval-card[data-approval-id="${approvalId}"]`);
  await card.getByText("Waiting for an approver.").waitFor();
  assert.equal(await card.locator(".status").innerText(), "waiting");
  await answer().getByText("the request is waiting").waitFor();
  await ready();
  await card.getByRole("heading", { name: "Issue invoice for Globex Corporation — 3,897.00 USD" }).waitFor();
  assert.match(await answer().locator('[data-tool="issue-invoice"]').innerText(), /needs an approver/);
  await noAlert("issue");
  await shot(page, "chat-2-waiting.png");
  log("2 waiting for an approver", approvalId);

  // 3. The approver approves in the inbox; the clerk's card follows live.
  const approverCtx = await browser.newContext({ viewport });
  const ap = await approverCtx.newPage();
  const apErrors = [];
  watch(ap, apErrors);
  await signIn(ap, BASE, APPROVER, PASSWORD);
  await ap.getByRole("link", { name: /^Issue invoice for Globex Corporation — 3,897\.00 USD$/ }).waitFor();
  await axe(ap, "/inbox");
  await shot(ap, "chat-3-inbox.png");
  await ap.goto(`${BASE}/approvals/${approvalId}`);
  await ap.getByText("Approving lets Carl Clerk (through the chat's assistant) issue this invoice once, within 24 h.").waitFor();
  await axe(ap, "an approval page");
  await page.evaluate(() => { window.__sameDocument = true; });
  await ap.getByRole("button", { name: "Approve" }).click();
  const approvedAt = Date.now();
  await ap.getByText("You approved this request.").waitFor();
  await card.locator(".status", { hasText: /^approved$/ }).waitFor({ timeout: 2000 });
  log(`3 the card showed "approved" ${Date.now() - approvedAt} ms after the click`);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "no reload");
  await card.getByText("Approved by alice. Continue to let the assistant finish.").waitFor();
  await shot(page, "chat-3-approved.png");
  await tabTo("Continue");
  await page.keyboard.press("Enter");
  const issued = answer().getByText(/issued as INV-\d{4}-\d{6}/);
  await issued.waitFor();
  await ready();
  const number = (await issued.innerText()).match(/INV-\d{4}-\d{6}/)[0];
  await card.locator(".status", { hasText: /^done$/ }).waitFor();
  await card.getByText("Approved by alice; the invoice was issued.").waitFor();
  await noAlert("continue");
  await shot(page, "chat-3-issued.png");

  // The show-invoice frontend tool opens the invoice beside the chat.
  await send("Show me that invoice.");
  const panel = page.locator(".invoice-panel");
  await panel.getByRole("heading", { name: `Invoice ${number}`, level: 2 }).waitFor();
  await answer().getByText("It is beside the chat.").waitFor();
  await ready();
  assert.match(await panel.innerText(), /Globex Corporation[\s\S]*3,897\.00 USD/);
  assert.match(await panel.innerText(), /approved by Alice Approver/);
  await shot(page, "chat-3-invoice.png");
  await panel.getByRole("button", { name: "Close" }).click();
  log("3 approved live, continued, issued", number);

  // 4. A reload mid-answer resumes it; the page is then the server's copy.
  await send("Tell me a story.");
  await answer().getByText(/Once upon a time story/).waitFor();
  const resumed = page.waitForResponse((r) => r.url() === `${BASE}/v1/chat/${conversation}/stream`);
  await page.reload();
  assert.equal((await resumed).status(), 200, "the reloaded page follows the run (GET …/stream)");
  await answer().getByText(/The end\.$/).waitFor({ timeout: 15000 });
  await ready();
  await noAlert("resume");
  const stored = await (await page.request.get(`${BASE}/v1/conversations/${conversation}`)).json();
  const shown = await page.evaluate(() =>
    [...document.querySelectorAll("li.msg")].map((li) => ({
      id: li.dataset.messageId,
      role: li.classList.contains("msg-user") ? "user" : "assistant",
      tools: [...li.querySelectorAll("[data-tool]")].map((t) => `${t.dataset.tool}:${t.dataset.state}`),
      text: [...li.querySelectorAll(".user-text, .md")].map((t) => t.innerText.trim()).join("\n"),
    })),
  );
  const plain = (s) => s.replace(/\*\*/g, "").trim();
  assert.deepEqual(
    shown.map(({ id, role, tools }) => ({ id, role, tools })),
    stored.messages.map((m) => ({
      id: m.id,
      role: m.role,
      tools: m.parts.filter((p) => p.type.startsWith("tool-")).map((p) => `${p.type.slice(5)}:${p.state}`),
    })),
    "the messages and tool states shown are the stored ones",
  );
  assert.equal(shown.at(-1).text, plain(stored.messages.at(-1).parts.filter((p) => p.type === "text").map((p) => p.text).join("")));
  assert.equal(shown.at(-2).text, "Tell me a story.");
  await shot(page, "chat-4-resumed.png");
  log("4 reload mid-answer resumed");

  // 5. Stop mid-answer, then send: accepted, no 409.
  await send("Tell me an endless tale.");
  await answer().getByText(/tale tale tale/).waitFor();
  await page.getByRole("button", { name: "Stop" }).click();
  await ready();
  const stoppedText = await answer().locator(".md").innerText();
  assert.doesNotMatch(stoppedText, /The end\./);
  await answer().getByText("stopped before the end").waitFor();
  const posted = page.waitForResponse((r) => r.url() === `${BASE}/v1/chat` && r.request().method() === "POST");
  await send("Thanks, that is enough.");
  assert.equal((await posted).status(), 200);
  await answer().getByText("You are welcome.").waitFor();
  await ready();
  await noAlert("stop");
  await shot(page, "chat-5-stopped.png");
  log("5 stopped, then sent: 200");

  // 6. A bound tool asks first: Deny, then on a new request Approve.
  await send("Draft an invoice for Globex.");
  const drafting = answer().locator('[data-tool="create-draft-invoice"][data-state="input-streaming"]');
  await drafting.waitFor();
  await drafting.locator(".drafting").waitFor();
  log("6 drafting:", (await drafting.innerText()).replace(/\s+/g, " "));
  const confirm = answer().getByRole("group", { name: /^Confirm: drafting an invoice$/ });
  await confirm.waitFor();
  const asked = await confirm.innerText();
  assert.match(asked, /Customer\s+Globex Corporation/, "the customer by name, not id");
  assert.match(asked, /Support, December\s+2\s+450\.00 USD\s+8\.25 %/, "the line in the customer's currency");
  await shot(page, "chat-6-confirm.png");
  await confirm.getByLabel("Reason for denying (optional)").fill("Not this month.");
  await confirm.getByRole("button", { name: "Deny" }).click();
  await answer().getByText("Understood: no draft.").waitFor();
  await ready();
  const deniedTool = answer().locator('[data-tool="create-draft-invoice"]');
  assert.equal(await deniedTool.getAttribute("data-state"), "output-denied");
  assert.match(await deniedTool.innerText(), /you denied it \(“Not this month\.”\), so it was not done/);
  await send("Draft an invoice for Globex, please.");
  const again = answer().getByRole("group", { name: /^Confirm: drafting an invoice$/ });
  await again.waitFor();
  // A message while the confirmation waits is not sent (the server
  // would refuse it): the page says why and keeps it in the box;
  // answering the confirmation goes on, and that sentence goes with it.
  await send("And one for Initech.");
  await page.getByRole("alert").getByText("The assistant is waiting for your answer above. Answer it first; your message is back in the box below.").waitFor();
  assert.equal(await composer.inputValue(), "And one for Initech.");
  await tabTo("Approve");
  await page.keyboard.press("Space");
  await answer().getByText("Drafted it.").waitFor();
  await ready();
  assert.equal(await answer().locator('[data-tool="create-draft-invoice"]').getAttribute("data-state"), "output-available");
  await noAlert("bound tool");
  await shot(page, "chat-6-approved.png");
  log("6 denied, then approved");

  // 7. Untrusted output renders inert.
  await send("Say something odd.");
  await answer().getByText(/Here is something odd/).waitFor();
  await ready();
  const odd = answer();
  assert.equal(await odd.locator("img").count(), 0, "no image element");
  assert.match(await odd.innerText(), /<img src=x onerror="window\.__xss=1">/, "the tag shows as text");
  assert.equal(await odd.locator("a").count(), 0, "the javascript: link is not a link");
  await odd.getByText("a link").click();
  assert.equal(await odd.locator("strong", { hasText: "bold" }).count(), 1, "Markdown still renders");
  assert.equal(await page.evaluate(() => window.__xss), undefined, "nothing ran");
  await shot(page, "chat-7-inert.png");
  log("7 inert");

  await axe(page, "/chat, a conversation");
  await page.setViewportSize({ width: 360, height: 780 });
  await noHorizontalScroll(page, "chat at 360px");
  await shot(page, "chat-360.png");
  assert.deepEqual(errors, [], "no console errors for the clerk (CSP violations included)");
  assert.deepEqual(apErrors, [], "no console errors for the approver");
  console.log(JSON.stringify({ number, approvalId }));
} finally {
  await browser.close();
}
