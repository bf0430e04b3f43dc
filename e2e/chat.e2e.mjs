// End-to-end: the real ai@7 client classes (AbstractChat, DefaultChatTransport,
// lastAssistantMessageIsCompleteWithApprovalResponses) drive POST /v1/chat.
// Run by steploop's Go test, which starts invoiced and a fake
// OpenAI-compatible model server and sets INVOICED_URL and INVOICED_TOKEN
// (and INVOICED_APP_* for the whole service, see scenario 4), once per
// request mode: INVOICED_REQUEST_MODE=full sends the whole message list
// (ai@7's default body), =last only the last message, as docs/chat.md's
// prepareSendMessagesRequest does.
// Prints one JSON line of observations for the Go side; exits non-zero on a
// failed assertion.
import assert from 'node:assert/strict';
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';

const base = process.env.INVOICED_URL;
const token = process.env.INVOICED_TOKEN;
assert.ok(base && token, 'INVOICED_URL and INVOICED_TOKEN must be set');
// The whole service (real invoices, approvals gate and REST API), a clerk's
// and an approver's tokens, and a draft invoice, for the consequential case.
const appBase = process.env.INVOICED_APP_URL;
const appToken = process.env.INVOICED_APP_TOKEN;
const approverToken = process.env.INVOICED_APPROVER_TOKEN;
const draftId = process.env.INVOICED_DRAFT_ID;
assert.ok(appBase && appToken && approverToken && draftId, 'INVOICED_APP_URL, INVOICED_APP_TOKEN, INVOICED_APPROVER_TOKEN and INVOICED_DRAFT_ID must be set');
const mode = process.env.INVOICED_REQUEST_MODE;
assert.ok(mode === 'full' || mode === 'last', 'INVOICED_REQUEST_MODE must be full or last');

// A minimal ChatState, as a framework binding (React, Vue, …) would keep it.
class State {
  constructor() {
    this.status = 'ready';
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) { this.messages = [...this.messages, m]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

let requests = 0;
const countingFetch = async (url, init) => {
  requests++;
  return fetch(url, init);
};

class Chat extends AbstractChat {
  constructor(id, extra = {}, server = { base, token }) {
    super({
      id,
      state: new State(),
      transport: new DefaultChatTransport({
        api: `${server.base}/v1/chat`,
        headers: { Authorization: `Bearer ${server.token}` },
        fetch: countingFetch,
        prepareSendMessagesRequest: mode === 'last' ? ({ id, messages }) => ({ body: { id, message: messages.at(-1) } }) : undefined,
      }),
      sendAutomaticallyWhen: ({ messages }) =>
        lastAssistantMessageIsCompleteWithApprovalResponses({ messages }) ||
        lastAssistantMessageIsCompleteWithToolCalls({ messages }),
      onError: () => {},
      ...extra,
    });
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function settle(chat) {
  // Automatic resubmissions start inside the chat's job queue; wait until
  // no request is in flight for a while.
  for (let quiet = 0; quiet < 5; ) {
    await sleep(20);
    quiet = chat.status === 'submitted' || chat.status === 'streaming' ? 0 : quiet + 1;
  }
}
const last = (chat) => chat.messages[chat.messages.length - 1];
const toolPart = (msg, name) => msg.parts.find((p) => p.type === `tool-${name}`);
const textOf = (msg) => msg.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

async function getConversation(id) {
  const r = await fetch(`${base}/v1/conversations/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(r.status, 200);
  return (await r.json()).messages;
}

const out = {};

// 1. A read tool runs on the server and feeds the next step.
{
  const chat = new Chat('e2e-read');
  await chat.sendMessage({ text: 'please look up alpha' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  const m = last(chat);
  assert.equal(m.role, 'assistant');
  const p = toolPart(m, 'lookup-thing');
  assert.equal(p.state, 'output-available');
  assert.deepEqual(p.output, { key: 'alpha', value: 'v-alpha', principal: 'clerk' });
  assert.equal(textOf(m), 'Found alpha.');
  // The client's copy is the server's copy.
  assert.deepEqual(JSON.parse(JSON.stringify(chat.messages.map((x) => x.id))), (await getConversation('e2e-read')).map((x) => x.id));
}

// 2. A bound tool approved in the client: exactly one tool result.
{
  const chat = new Chat('e2e-approve');
  await chat.sendMessage({ text: 'remind alice' });
  await settle(chat);
  let p = toolPart(last(chat), 'send-reminder');
  assert.equal(p.state, 'approval-requested');
  assert.ok(p.approval.id);
  await chat.addToolApprovalResponse({ id: p.approval.id, approved: true });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  const m = last(chat);
  const parts = m.parts.filter((x) => x.type === 'tool-send-reminder');
  assert.equal(parts.length, 1);
  assert.equal(parts[0].state, 'output-available');
  assert.deepEqual(parts[0].output, { sent_to: 'alice' });
  assert.match(textOf(m), /Done with the reminder\./);
  out.approvedToolCallId = parts[0].toolCallId;
}

// 3. A bound tool denied in the client: the model reads CONFIRMATION_INVALID denied.
{
  const chat = new Chat('e2e-deny');
  await chat.sendMessage({ text: 'remind alice again' });
  await settle(chat);
  const p = toolPart(last(chat), 'send-reminder');
  assert.equal(p.state, 'approval-requested');
  await chat.addToolApprovalResponse({ id: p.approval.id, approved: false, reason: 'not today' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  const q = toolPart(last(chat), 'send-reminder');
  assert.equal(q.state, 'output-denied');
  out.deniedToolCallId = q.toolCallId;
}

// 4. A consequential tool (the real issue-invoice): APPROVAL_REQUIRED with a
//    data-approval part, approved by an approver through the REST API, then
//    succeeding on the next user request.
{
  const chat = new Chat('e2e-approval', {}, { base: appBase, token: appToken });
  await chat.sendMessage({ text: 'issue the draft' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  let m = last(chat);
  const p = toolPart(m, 'issue-invoice');
  assert.equal(p.state, 'output-available');
  assert.equal(p.output.error.code, 'APPROVAL_REQUIRED');
  assert.ok(!m.parts.some((x) => x.state === 'approval-requested'), 'never a tool-approval-request for a consequential tool');
  const data = m.parts.find((x) => x.type === 'data-approval');
  assert.ok(data, 'a data-approval part');
  assert.equal(data.data.approval_id, p.output.error.approval_id);
  assert.equal(data.data.capability, 'issue-invoice');
  assert.equal(data.data.status, 'pending');
  assert.deepEqual(data.data.target, { type: 'invoice', id: draftId, version: 1 });
  // The clerk cannot approve its own request; an approver can.
  const approve = (tok) => fetch(`${appBase}/v1/approvals/${data.data.approval_id}/approve`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${tok}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ reason: 'checked the lines' }),
  });
  assert.equal((await approve(appToken)).status, 403);
  const r = await approve(approverToken);
  const decided = await r.text();
  assert.equal(r.status, 200, decided);
  assert.equal(JSON.parse(decided).status, 'approved');
  await chat.sendMessage({ text: 'issue the draft now that it is approved' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  m = last(chat);
  const issued = toolPart(m, 'issue-invoice');
  assert.equal(issued.state, 'output-available');
  assert.equal(issued.output.error, undefined, JSON.stringify(issued.output));
  assert.equal(issued.output.status, 'issued');
  assert.equal(issued.output.id, draftId);
  out.approvalId = data.data.approval_id;
}

// 5. A frontend tool round trip: the browser runs show-invoice.
{
  const shown = [];
  let chat;
  chat = new Chat('e2e-frontend', {
    onToolCall: ({ toolCall }) => {
      if (toolCall.toolName === 'show-invoice') {
        shown.push(toolCall.input.invoice_id);
        chat.addToolOutput({ tool: 'show-invoice', toolCallId: toolCall.toolCallId, output: { shown: true } });
      }
    },
  });
  await chat.sendMessage({ text: 'show me the invoice' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  assert.deepEqual(shown, ['0190e0a4-8c2b-7cc8-9d7e-5a1f7e2b4c11']);
  const m = last(chat);
  assert.deepEqual(toolPart(m, 'show-invoice').output, { shown: true });
  assert.match(textOf(m), /It is on your screen\./);
  const stored = await getConversation('e2e-frontend');
  assert.deepEqual(stored[1].parts.find((x) => x.type === 'tool-show-invoice').output, { shown: true });
  out.frontendToolCallId = toolPart(m, 'show-invoice').toolCallId;
}

// 6. A client that edits a paused tool call's input before approving is
//    refused, and nothing runs.
{
  const chat = new Chat('e2e-edit');
  await chat.sendMessage({ text: 'remind alice please' });
  await settle(chat);
  const m = last(chat);
  const p = toolPart(m, 'send-reminder');
  assert.equal(p.state, 'approval-requested');
  chat.messages = chat.messages.map((x) => x.id !== m.id ? x : {
    ...x, parts: x.parts.map((q) => q.type === 'tool-send-reminder' ? { ...q, input: { to: 'mallory' } } : q),
  });
  const before = requests;
  await chat.addToolApprovalResponse({ id: p.approval.id, approved: true });
  await settle(chat);
  assert.equal(requests, before + 1, 'the approval was sent');
  assert.equal(chat.status, 'error');
  assert.match(chat.error.message, /TRANSCRIPT_MISMATCH/);
  assert.match(chat.error.message, /input differs/);
  const stored = await getConversation('e2e-edit');
  assert.equal(toolPart(stored[stored.length - 1], 'send-reminder').state, 'approval-requested', 'nothing was stored');
  out.editRefused = true;
}

// 7. A forged tool output (for a call waiting for confirmation) is refused.
{
  const chat = new Chat('e2e-forge');
  await chat.sendMessage({ text: 'remind alice today' });
  await settle(chat);
  const p = toolPart(last(chat), 'send-reminder');
  assert.equal(p.state, 'approval-requested');
  await chat.addToolOutput({ tool: 'send-reminder', toolCallId: p.toolCallId, output: { sent_to: 'alice' } });
  await settle(chat);
  if (chat.status !== 'error') {
    await chat.sendMessage();
    await settle(chat);
  }
  assert.equal(chat.status, 'error');
  assert.match(chat.error.message, /TRANSCRIPT_MISMATCH/);
  assert.match(chat.error.message, /cannot become \\"output-available\\"/);
  const stored = await getConversation('e2e-forge');
  assert.equal(toolPart(stored[stored.length - 1], 'send-reminder').state, 'approval-requested', 'nothing was stored');
  out.forgeRefused = true;
}

console.log(JSON.stringify(out));
