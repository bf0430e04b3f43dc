// End-to-end: the real ai@7 client classes (AbstractChat, DefaultChatTransport,
// lastAssistantMessageIsCompleteWithApprovalResponses) drive POST /v1/chat.
// Run by steploop's Go test, which starts invoiced and a fake
// OpenAI-compatible model server and sets INVOICED_URL and INVOICED_TOKEN.
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
  constructor(id, extra = {}) {
    super({
      id,
      state: new State(),
      transport: new DefaultChatTransport({
        api: `${base}/v1/chat`,
        headers: { Authorization: `Bearer ${token}` },
        fetch: countingFetch,
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

// 4. A consequential tool: APPROVAL_REQUIRED with a data-approval part,
//    approved through the REST API, then succeeding on the next request.
{
  const chat = new Chat('e2e-approval');
  await chat.sendMessage({ text: 'issue t1' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  let m = last(chat);
  const p = toolPart(m, 'issue-thing');
  assert.equal(p.state, 'output-available');
  assert.equal(p.output.error.code, 'APPROVAL_REQUIRED');
  assert.equal(p.output.error.status, 'pending');
  assert.ok(!m.parts.some((x) => x.state === 'approval-requested'), 'never a tool-approval-request for a consequential tool');
  const data = m.parts.find((x) => x.type === 'data-approval');
  assert.ok(data, 'a data-approval part');
  assert.equal(data.data.approval_id, p.output.error.approval_id);
  assert.equal(data.data.capability, 'issue-thing');
  assert.equal(data.data.status, 'pending');
  assert.deepEqual(data.data.target, { type: 'thing', id: 't1' });
  const r = await fetch(`${base}/v1/test/approvals/${data.data.approval_id}/approve`, {
    method: 'POST', headers: { Authorization: `Bearer ${token}` },
  });
  assert.equal(r.status, 200);
  await chat.sendMessage({ text: 'issue t1 now that it is approved' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  m = last(chat);
  assert.deepEqual(toolPart(m, 'issue-thing').output, { issued: 't1', approval_id: data.data.approval_id });
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
  out.forgeRefused = true;
}

console.log(JSON.stringify(out));
