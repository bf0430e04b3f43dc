// Stream conformance: the real ai@7 AbstractChat consumes POST /v1/chat in
// edge cases (model errors and panics mid-text, tool-call ids reused or
// duplicated, bad arguments, a character split across deltas, stops, …).
// Every response's headers and framing are checked and every chunk against
// ai@7's own uiMessageChunkSchema; the client's messages must equal GET
// /v1/conversations/{id}, and a follow-up message must be accepted.
// Run by steploop's TestChatStreamConformsToTheAISDKClient, which serves
// the edge cases from a model of its own. Prints a report; a line starting
// with FAIL is a failure, and the exit code is then 1.
import {
  AbstractChat,
  DefaultChatTransport,
  uiMessageChunkSchema,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { safeValidateTypes } from '@ai-sdk/provider-utils';
import { isDeepStrictEqual } from 'node:util';

const base = process.env.INVOICED_URL;
const token = process.env.INVOICED_TOKEN;

class State {
  constructor() { this.status = 'ready'; this.error = undefined; this.messages = []; }
  pushMessage(m) { this.messages = [...this.messages, m]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

const bodies = [];
const captureFetch = async (url, init) => {
  const r = await fetch(url, init);
  if (!r.body) return r;
  const [a, b] = r.body.tee();
  const rec = { status: r.status, headers: Object.fromEntries(r.headers), request: JSON.parse(init.body), text: null };
  rec.done = new Response(b).text().then((t) => (rec.text = t), (e) => (rec.text = `<<aborted: ${e.name}>>`));
  bodies.push(rec);
  return new Response(a, { status: r.status, statusText: r.statusText, headers: r.headers });
};

class Chat extends AbstractChat {
  constructor(id) {
    super({
      id,
      state: new State(),
      transport: new DefaultChatTransport({ api: `${base}/v1/chat`, headers: { Authorization: `Bearer ${token}` }, fetch: captureFetch }),
      sendAutomaticallyWhen: ({ messages }) =>
        lastAssistantMessageIsCompleteWithApprovalResponses({ messages }) || lastAssistantMessageIsCompleteWithToolCalls({ messages }),
      onError: () => {},
    });
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function settle(chat) {
  for (let quiet = 0; quiet < 5;) {
    await sleep(20);
    quiet = chat.status === 'submitted' || chat.status === 'streaming' ? 0 : quiet + 1;
  }
}
async function getConversation(id) {
  const r = await fetch(`${base}/v1/conversations/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  return (await r.json()).messages;
}
const KEYS = ['type', 'id', 'text', 'state', 'toolCallId', 'input', 'output', 'errorText', 'approval', 'data'];
function norm(msgs) {
  return JSON.parse(JSON.stringify(msgs.map((m) => ({
    id: m.id, role: m.role,
    parts: m.parts.map((p) => Object.fromEntries(KEYS.filter((k) => p[k] !== undefined).map((k) => [k, p[k]]))),
  }))));
}

const report = [];
const fail = (s) => report.push('FAIL ' + s);
const note = (s) => report.push('     ' + s);

async function checkFraming(name, rec) {
  await rec.done;
  if (rec.status !== 200) return;
  const h = rec.headers;
  if (!String(h['content-type']).startsWith('text/event-stream')) fail(`${name}: content-type ${h['content-type']}`);
  if (h['x-vercel-ai-ui-message-stream'] !== 'v1') fail(`${name}: missing v1 header`);
  if (h['cache-control'] !== 'no-cache') fail(`${name}: cache-control ${h['cache-control']}`);
  if (h['x-accel-buffering'] !== 'no') fail(`${name}: x-accel-buffering ${h['x-accel-buffering']}`);
  const events = rec.text.split('\n\n');
  if (events[events.length - 1] !== '') fail(`${name}: body does not end with a blank line: ${JSON.stringify(rec.text.slice(-80))}`);
  const datas = events.filter((e) => e !== '').map((e) => {
    if (!e.startsWith('data: ') || e.includes('\n')) fail(`${name}: odd event ${JSON.stringify(e)}`);
    return e.slice(6);
  });
  const doneIdx = datas.indexOf('[DONE]');
  if (doneIdx < 0) fail(`${name}: no [DONE]; last chunk ${datas[datas.length - 1]}`);
  else if (doneIdx !== datas.length - 1 || datas.filter((d) => d === '[DONE]').length !== 1) fail(`${name}: [DONE] not last/once`);
  const types = [];
  const open = new Set();
  let steps = 0;
  for (const d of datas) {
    if (d === '[DONE]') continue;
    const v = JSON.parse(d);
    const r = await safeValidateTypes({ value: v, schema: uiMessageChunkSchema });
    if (!r.success) fail(`${name}: chunk fails ai@7 schema: ${d}`);
    types.push(v.type);
    if (v.type === 'text-start') open.add(v.id);
    if (v.type === 'text-end') open.delete(v.id);
    if (v.type === 'start-step') steps++;
    if (v.type === 'finish-step') steps--;
  }
  if (types[0] !== 'start') fail(`${name}: first chunk ${types[0]}`);
  const last = types[types.length - 1];
  if (last !== 'finish' && last !== 'error') fail(`${name}: last chunk is ${last}, neither finish nor error`);
  if (open.size) note(`${name}: text parts never ended: ${[...open]}`);
  if (steps !== 0) note(`${name}: start-step/finish-step unbalanced by ${steps}`);
  note(`${name}: chunks ${types.join(',')}`);
}

// scenario: a new chat answering text, its framing checked, its copies
// compared, then a follow-up message (compare and followUp are below).
async function scenario(name, text) {
  const id = `conf-${name}-${Date.now()}`;
  const chat = new Chat(id);
  const n0 = bodies.length;
  await chat.sendMessage({ text });
  await settle(chat);
  for (const rec of bodies.slice(n0)) await checkFraming(name, rec);
  note(`${name}: status=${chat.status} error=${chat.error?.message ?? ''}`);
  await compare(name, chat, id);
  await followUp(name, chat);
  await compare(`${name}(after follow-up)`, chat, id);
  return chat;
}

await scenario('plain', 'hi');
await scenario('weird', 'weird text');
await scenario('emptydelta', 'emptydelta');
await scenario('nothing', 'nothing at all');
await scenario('length', 'length');
await scenario('readtool', 'readtool');
{
  // The model reuses a tool call id of an earlier message.
  const id = `conf-reuse-${Date.now()}`;
  const chat = new Chat(id);
  await chat.sendMessage({ text: 'readtool one' });
  await settle(chat);
  await chat.sendMessage({ text: 'readtool two' });
  await settle(chat);
  const ids = chat.messages.flatMap((m) => m.parts.filter((p) => p.toolCallId).map((p) => p.toolCallId));
  if (new Set(ids).size !== ids.length) fail(`reuse: toolCallId reused across messages: ${ids}`);
  if (!isDeepStrictEqual(norm(chat.messages), norm(await getConversation(id)))) fail('reuse: client differs from server');
  note(`reuse: status=${chat.status} ids=${ids}`);
}
await scenario('dupid', 'dupid');
await scenario('badargs', 'badargs');
await scenario('approval', 'approval please');
await scenario('failmid', 'failmid');
await scenario('panicmid', 'panicmid');
await scenario('panictool', 'panictool');
await scenario('utf8split', 'utf8split');
await scenario('slow', 'slow');

async function compare(name, chat, id) {
  const server = norm(await getConversation(id));
  const client = norm(chat.messages);
  if (!isDeepStrictEqual(server, client)) fail(`${name}: client differs from GET:\n  client=${JSON.stringify(client)}\n  server=${JSON.stringify(server)}`);
}
async function followUp(name, chat) {
  const n1 = bodies.length;
  await chat.sendMessage({ text: 'hello again' });
  await settle(chat);
  const rec = bodies[n1];
  await rec?.done;
  if (!rec || rec.status !== 200) fail(`${name}: follow-up refused: ${rec?.status} ${rec?.text}`);
}
// Frontend tool (with a server read tool and text in the same step).
{
  const id = `conf-frontend-${Date.now()}`;
  const chat = new Chat(id);
  const n0 = bodies.length;
  await chat.sendMessage({ text: 'frontend please' });
  await settle(chat);
  const p = chat.messages.at(-1).parts.find((x) => x.type === 'tool-show-invoice');
  note(`frontend: part state ${p?.state} status=${chat.status}`);
  await compare('frontend(before output)', chat, id);
  await chat.addToolOutput({ tool: 'show-invoice', toolCallId: p.toolCallId, output: { shown: true } });
  await settle(chat);
  for (const rec of bodies.slice(n0)) await checkFraming('frontend', rec);
  note(`frontend: requests=${bodies.length - n0} status=${chat.status} err=${chat.error?.message ?? ''}`);
  await compare('frontend(after)', chat, id);
  await followUp('frontend', chat);
  await compare('frontend(after follow-up)', chat, id);
}
// Bound tool approved and denied.
for (const approved of [true, false]) {
  const name = `bound-${approved}`;
  const id = `conf-${name}-${Date.now()}`;
  const chat = new Chat(id);
  const n0 = bodies.length;
  await chat.sendMessage({ text: 'bound please' });
  await settle(chat);
  const p = chat.messages.at(-1).parts.find((x) => x.type === 'tool-send-reminder');
  await compare(`${name}(requested)`, chat, id);
  await chat.addToolApprovalResponse({ id: p.approval.id, approved, reason: approved ? undefined : 'no' });
  await settle(chat);
  for (const rec of bodies.slice(n0)) await checkFraming(name, rec);
  note(`${name}: status=${chat.status} err=${chat.error?.message ?? ''}`);
  await compare(name, chat, id);
  await followUp(name, chat);
  await compare(`${name}(after follow-up)`, chat, id);
}
// docs/chat.md's stop button: POST /v1/chat/{id}/stop, which answers once
// the run has ended (200), or 204 when it had ended already. A client
// still reading gets the run's end (abort, then finish "interrupted"):
// its copy is the stored one, and its next message is accepted.
async function stopRoute(name, id) {
  const r = await fetch(`${base}/v1/chat/${id}/stop`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
  if (r.status !== 200 && r.status !== 204) fail(`${name}: the stop route answered ${r.status}: ${await r.text()}`);
  return r.status;
}
for (const at of [300, 1950]) {
  const name = `stop@${at}`;
  const id = `conf-stop-${at}-${Date.now()}`;
  const chat = new Chat(id);
  const pr = chat.sendMessage({ text: 'slow' });
  await sleep(at);
  const status = await stopRoute(name, id);
  await pr;
  await settle(chat);
  note(`${name}: status=${chat.status} stop route=${status}`);
  await compare(name, chat, id);
  await followUp(name, chat);
  await compare(`${name}(after follow-up)`, chat, id);
}
// useChat's stop() as well (it aborts the fetch): the client keeps what
// reached it, a prefix of what the server stored, and its next message is
// accepted without a reload.
for (const at of [300, 1950]) {
  const name = `stop()+route@${at}`;
  const id = `conf-abort-${at}-${Date.now()}`;
  const chat = new Chat(id);
  const pr = chat.sendMessage({ text: 'slow' });
  await sleep(at);
  await chat.stop();
  const status = await stopRoute(name, id);
  await pr;
  await settle(chat);
  note(`${name}: status=${chat.status} stop route=${status}`);
  await followUp(name, chat);
  const server = norm(await getConversation(id));
  const client = norm(chat.messages);
  const cut = (c, s) => c.parts.length <= s.parts.length && c.parts.every((p, i) => p.type === s.parts[i].type && (p.text === undefined || s.parts[i].text.startsWith(p.text)));
  if (server.length !== client.length || !client.every((m, i) => i === 1 ? cut(m, server[i]) : isDeepStrictEqual(m, server[i]))) {
    fail(`${name}(after follow-up): the client's copy is not the stored one, cut where it stopped:\n  client=${JSON.stringify(client)}\n  server=${JSON.stringify(server)}`);
  }
}

{
  const name = 'stop-during-server-tool';
  const id = `conf-stoptool-${Date.now()}`;
  const chat = new Chat(id);
  const pr = chat.sendMessage({ text: 'sleeptool' });
  await sleep(300);
  await stopRoute(name, id);
  await pr;
  await settle(chat);
  note(`${name}: status=${chat.status} client parts=${JSON.stringify(norm(chat.messages).at(-1)?.parts)}`);
  // The tool that was running finished and is stored with its result, as
  // the client holds it; the next model step did not run.
  const stored = await getConversation(id);
  if (stored.at(-1)?.parts.find((x) => x.type === 'tool-sleep-thing')?.state !== 'output-available') fail(`${name}: the running tool's result was not stored`);
  if (stored.at(-1)?.metadata?.finishReason !== 'interrupted') fail(`${name}: the stored answer is not marked interrupted: ${JSON.stringify(stored.at(-1)?.metadata)}`);
  await compare(name, chat, id);
  await followUp(name, chat);
  await compare(`${name}(after follow-up)`, chat, id);
}
console.log(report.join('\n'));
if (report.some((l) => l.startsWith('FAIL'))) process.exitCode = 1;
