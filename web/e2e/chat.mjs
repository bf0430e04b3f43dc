// Browser story of the chat page (issue 16), run by web/chatstory_test.go,
// which starts the service behind a fake OpenAI-compatible model (its
// answers are chatStory.answer), creates the clerk, the approver and a
// draft for Globex Corporation, and checks the database afterwards. The
// clerk and the approver each have a browser context of VIEWPORT's size
// (a laptop's 1280x800 or a phone's 390x844). After every step the
// newest message must be in view above the message box, where the page
// put it: nothing here scrolls. Prints one JSON line for the Go side: the
// invoice number the clerk read and the approval id.
import assert from "node:assert/strict";
import { axe, env, launch, log, newestInView, noHorizontalScroll, shot as shotIn, signIn, watch } from "./lib.mjs";

const BASE = env("BASE_URL");
const OUT = env("OUT_DIR");
const PASSWORD = env("PASSWORD");
const CLERK = env("CLERK");
const DRAFT = env("DRAFT_ID");
const APPROVER = env("APPROVER");
const [width, height] = env("VIEWPORT").split("x").map(Number);
const viewport = { width, height };

// The chat is pictured as the clerk sees it: the window, where the page
// left it.
const shot = (page, name) => shotIn(page, OUT, name, { fullPage: !page.url().includes("/chat") });
const browser = await launch();

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
  const inView = (step) => newestInView(page, `${step} at ${width}x${height}`);
  // toolSentence is a finished call's sentence and the page it links to.
  const toolSentence = async (tool) => {
    const line = tool.locator(".tool-line");
    const link = line.locator("a");
    return { text: (await line.innerText()).trim(), href: (await link.count()) ? await link.getAttribute("href") : null };
  };

  // 1. A read tool, then the answer.
  await send("Which invoices are still drafts?");
  await page.waitForURL(/\/chat\/[A-Za-z0-9_-]+$/);
  const conversation = page.url().split("/").pop();
  const tool = answer().locator('[data-tool="list-invoices"]');
  await tool.waitFor();
  await answer().getByText("There is one draft").waitFor();
  await ready();
  assert.equal(await tool.getAttribute("data-state"), "output-available");
  assert.deepEqual(await toolSentence(tool), { text: "Looked up invoices: 1 found", href: null });
  const order = await page.evaluate(() => {
    const m = [...document.querySelectorAll("li.msg-assistant")].at(-1);
    const t = m.querySelector('[data-tool="list-invoices"]'), a = m.querySelector(".md");
    return Boolean(t.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  assert.ok(order, "the tool part comes before the answer");
  const reasoning = answer().locator("details.reasoning");
  assert.equal(await reasoning.evaluate((d) => d.open), false, "reasoning is collapsed");
  // When the answer came shows; the model and its tokens wait under
  // Details.
  assert.match(await answer().locator(".msg-foot > .usage").innerText(), /^\d{1,2}:\d\d(\s?[AP]M)?$/);
  const details = answer().locator("details.usage-details");
  assert.equal(await details.evaluate((d) => d.open), false, "the model and tokens are folded away");
  assert.equal(await details.locator("summary").innerText(), "Details");
  await details.locator("summary").click();
  assert.match(await details.locator(".usage").innerText(), /^fake-model · \d+ tokens in, \d+ out$/);
  await details.locator("summary").click();
  await page.getByText("The assistant says: There is one draft").waitFor({ state: "attached" });
  assert.equal(await page.locator('[aria-live="polite"]', { hasText: "The assistant says: There is one draft" }).count(), 1, "the answer is announced");
  await page.locator(".conv-list").getByRole("link", { name: /Which invoices are still drafts\?/ }).waitFor();
  await noAlert("read");
  await inView("1 read");
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
  await inView("2 waiting");
  await shot(page, "chat-2-waiting.png");
  log("2 waiting for an approver", approvalId);

  // 3. The approver approves in the inbox; the clerk's card follows live.
  const approverCtx = await browser.newContext({ viewport });
  const ap = await approverCtx.newPage();
  const apErrors = [];
  watch(ap, apErrors);
  // An approver who opens the chat reads where their work is, and goes
  // there.
  await signIn(ap, BASE, APPROVER, PASSWORD, "/chat");
  await ap.getByRole("heading", { name: "Your work is in the inbox", level: 1 }).waitFor();
  assert.doesNotMatch(await ap.locator("main").innerText(), /Forbidden/);
  await axe(ap, "/chat for an approver");
  await ap.locator("main").getByRole("link", { name: "inbox" }).click();
  await ap.waitForURL(`${BASE}/inbox`);
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
  await inView("3 approved");
  await shot(page, "chat-3-approved.png");
  await tabTo("Continue");
  await page.keyboard.press("Enter");
  const issued = answer().getByText(/issued as INV-\d{4}-\d{6}/);
  await issued.waitFor();
  await ready();
  const number = (await issued.innerText()).match(/INV-\d{4}-\d{6}/)[0];
  await card.locator(".status", { hasText: /^done$/ }).waitFor();
  await card.getByText("Approved by alice; the invoice was issued.").waitFor();
  // The call that went through says what it did, linked to the invoice.
  const issuedTool = answer().locator('[data-tool="issue-invoice"][data-state="output-available"]');
  assert.deepEqual(await toolSentence(issuedTool), { text: `Issued ${number} to Globex Corporation — 3,897.00 USD`, href: `/invoices/${DRAFT}` });
  await noAlert("continue");
  await inView("3 continued");
  await shot(page, "chat-3-issued.png");

  // The show-invoice frontend tool opens the invoice beside the chat.
  await send("Show me that invoice.");
  const panel = page.locator(".invoice-panel");
  await panel.getByRole("heading", { name: `Invoice ${number}`, level: 2 }).waitFor();
  await answer().getByText("It is beside the chat.").waitFor();
  await ready();
  assert.match(await panel.innerText(), /Globex Corporation[\s\S]*3,897\.00 USD/);
  assert.match(await panel.innerText(), /approved by Alice Approver/);
  await inView("3 invoice shown");
  await shot(page, "chat-3-invoice.png");
  await panel.getByRole("button", { name: "Close" }).click();
  log("3 approved live, continued, issued", number);

  // 4. A reload mid-answer resumes it; the page is then the server's copy.
  await send("Tell me a story.");
  await answer().getByText(/Once upon a time story/).waitFor();
  await inView("4 sent, answer being written");
  const resumed = page.waitForResponse((r) => r.url() === `${BASE}/v1/chat/${conversation}/stream`);
  await page.reload();
  assert.equal((await resumed).status(), 200, "the reloaded page follows the run (GET …/stream)");
  await answer().getByText(/Once upon a time story/).waitFor();
  await inView("4 reloaded, answer being written");
  await answer().getByText(/The end\.$/).waitFor({ timeout: 15000 });
  await ready();
  await noAlert("resume");
  const stored = await (await page.request.get(`${BASE}/v1/conversations/${conversation}`)).json();
  await inView("4 resumed");
  const shown = await page.evaluate(() =>
    [...document.querySelectorAll("li.msg")].map((li) => ({
      id: li.dataset.messageId,
      role: li.classList.contains("msg-user") ? "user" : "assistant",
      tools: [...li.querySelectorAll("[data-tool]")].map((t) => `${t.dataset.tool}:${t.dataset.state}`),
      text: [...li.querySelectorAll(".user-text, .md")].map((t) => t.innerText.trim()).join("\n"),
    })),
  );
  const plain = (s) => s.replace(/\*\*/g, "").trim();
  // An answer with nothing in it is not shown (there is none here yet).
  assert.deepEqual(
    shown.map(({ id, role, tools }) => ({ id, role, tools })),
    stored.messages.filter((m) => m.parts.some((p) => p.type !== "step-start")).map((m) => ({
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
  await inView("5 stopped");
  const posted = page.waitForResponse((r) => r.url() === `${BASE}/v1/chat` && r.request().method() === "POST");
  await send("Thanks, that is enough.");
  assert.equal((await posted).status(), 200);
  await answer().getByText("You are welcome.").waitFor();
  await ready();
  await noAlert("stop");
  await inView("5 sent after the stop");
  await shot(page, "chat-5-stopped.png");

  // Stopped before the first word: no empty answer is left behind.
  // The run is under way once its answer's headers are back; the model
  // says nothing for 10 s.
  const running = page.waitForResponse((r) => r.url() === `${BASE}/v1/chat` && r.request().method() === "POST");
  await send("Wait for it.");
  assert.equal((await running).status(), 200);
  await page.getByRole("button", { name: "Stop" }).click();
  await ready();
  await noAlert("stop before the first word");
  const last = page.locator("li.msg").last();
  assert.equal(await last.getAttribute("class"), "msg msg-user");
  assert.equal(await last.locator(".user-text").innerText(), "Wait for it.");
  await inView("5 stopped before the first word");
  await shot(page, "chat-5-stopped-early.png");
  log("5 stopped, then sent: 200; stopped early: no empty answer");

  // A failed model request: the question is back in the box, said so;
  // sent again, it is answered.
  await send("Check the ledger.");
  const failed = page.getByRole("alert");
  await failed.getByText("The model request failed; the error has been logged. Send the message again to retry. Your message is back in the box below.").waitFor();
  await ready();
  assert.equal(await composer.inputValue(), "Check the ledger.");
  assert.equal(await page.locator("li.msg").last().locator(".user-text").innerText(), "Check the ledger.", "no empty answer");
  await inView("5 model failed");
  await shot(page, "chat-5-failed.png");
  await composer.press("Enter");
  await answer().getByText("The ledger is in order.").waitFor();
  await ready();
  await noAlert("sent again");
  assert.equal(await composer.inputValue(), "");
  await inView("5 sent again");
  log("5 failed model request: back in the box, sent again");

  // 6. A bound tool asks first: Deny, then on a new request Approve.
  await send("Draft an invoice for Globex.");
  const drafting = answer().locator('[data-tool="create-draft-invoice"][data-state="input-streaming"]');
  await drafting.waitFor();
  await drafting.locator(".drafting").waitFor();
  log("6 drafting:", (await drafting.innerText()).replace(/\s+/g, " "));
  const confirm = answer().getByRole("group", { name: /^Confirm: drafting an invoice$/ });
  await confirm.waitFor();
  const asked = await confirm.innerText();
  assert.match(asked, /^The assistant asks to draft an invoice:/);
  assert.match(asked, /Customer\s+Globex Corporation/, "the customer by name, not id");
  assert.match(asked, /Service period\s+1–31 Dec 2026/, "the period as a period");
  assert.match(asked, /Payment terms\s+30 days/);
  // Before Approve: the lines, their tax and the total, priced as the
  // server will price them.
  const rows = await confirm.locator("table tr").evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText.trim())));
  assert.deepEqual(rows, [
    ["Description", "Qty", "Unit", "Tax", "Amount"],
    ["Support, December", "2 HUR", "450.00", "8.25 %", "900.00"],
    ["Hosting, December", "1 MON", "120.00", "8.25 % S", "120.00"],
    ["Travel", "1", "85.50", "0 %", "85.50"],
    ["Subtotal", "1,105.50"],
    ["Tax", "84.15"],
    ["Total", "1,189.65 USD"],
  ]);
  await inView("6 confirmation asked");
  await shot(page, "chat-6-confirm.png");
  await confirm.getByLabel("Reason for denying (optional)").fill("Not this month.");
  await confirm.getByRole("button", { name: "Deny" }).click();
  await answer().getByText("Understood: no draft.").waitFor();
  await ready();
  const deniedTool = answer().locator('[data-tool="create-draft-invoice"]');
  assert.equal(await deniedTool.getAttribute("data-state"), "output-denied");
  assert.match(await deniedTool.innerText(), /you denied it \(“Not this month\.”\), so it was not done/);
  await inView("6 denied");
  await send("Draft an invoice for Globex, please.");
  const again = answer().getByRole("group", { name: /^Confirm: drafting an invoice$/ });
  await again.waitFor();
  // A message while the confirmation waits is not sent (the server
  // would refuse it): the page says why and keeps it in the box;
  // answering the confirmation goes on, and that sentence goes with it.
  await send("And one for Initech.");
  await page.getByRole("alert").getByText("The assistant is waiting for your answer above. Answer it first; your message is back in the box below.").waitFor();
  assert.equal(await composer.inputValue(), "And one for Initech.");
  await inView("6 answer it first");
  await tabTo("Approve");
  await page.keyboard.press("Space");
  await answer().getByText("Drafted it.").waitFor();
  await ready();
  const drafted = answer().locator('[data-tool="create-draft-invoice"]');
  assert.equal(await drafted.getAttribute("data-state"), "output-available");
  const made = await toolSentence(drafted);
  assert.equal(made.text, "Drafted an invoice for Globex Corporation — 3 lines, 1,189.65 USD");
  assert.match(made.href, /^\/invoices\/[0-9a-f-]{36}$/);
  await noAlert("bound tool");
  await inView("6 approved");
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
  await inView("7 inert");
  await shot(page, "chat-7-inert.png");
  log("7 inert");

  // 8. Opening the conversation from the list: at its end.
  // The address is already the conversation's: the new document's load
  // says the page was opened again.
  const loaded = page.waitForEvent("load");
  await page.locator(".conv-list").getByRole("link", { name: /Which invoices are still drafts\?/ }).click();
  await loaded;
  assert.equal(page.url(), `${BASE}/chat/${conversation}`);
  await answer().getByText(/Here is something odd/).waitFor();
  await inView("8 opened");
  await shot(page, "chat-8-opened.png");
  log("8 opened at its end");

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
