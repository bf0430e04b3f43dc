// End-to-end: runs that survive the tab, driven by the real ai@7 client
// classes (AbstractChat, DefaultChatTransport) as useChat({ resume: true })
// and docs/chat.md's setup use them. Run by steploop's
// TestE2ERunsWithTheAISDKClient, which serves two replicas of the step loop
// on one database (INVOICED_URL_A, INVOICED_URL_B), a third in a process of
// its own (INVOICED_REPLICA_URL, INVOICED_REPLICA_PID) and a fake
// OpenAI-compatible model. Prints one JSON line for the Go side; progress
// goes to stderr; exits non-zero on a failed assertion.
import assert from 'node:assert/strict';
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from 'ai';

const A = process.env.INVOICED_URL_A;
const B = process.env.INVOICED_URL_B;
const token = process.env.INVOICED_TOKEN;
const other = process.env.INVOICED_OTHER_TOKEN;
const replica = process.env.INVOICED_REPLICA_URL;
const replicaPid = Number(process.env.INVOICED_REPLICA_PID);
const leaseMs = Number(process.env.INVOICED_LEASE_MS);
assert.ok(A && B && token && other && replica && replicaPid && leaseMs, 'the INVOICED_* variables must be set');

const log = (s) => process.stderr.write(s + '\n');

// A ChatState as a framework binding keeps it; it also remembers every tool
// part state the UI was shown.
class State {
  constructor(messages = []) { this.status = 'ready'; this.error = undefined; this.messages = messages; this.seen = new Set(); }
  see(m) { for (const p of m.parts) if (p.type.startsWith('tool-')) this.seen.add(`${p.type}:${p.state}`); }
  pushMessage(m) { this.see(m); this.messages = [...this.messages, m]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.see(m); this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

// Every response body, for the chunk order checks.
const bodies = [];
const recordingFetch = async (url, init) => {
  const r = await fetch(url, init);
  if (!r.body) return r;
  const [a, b] = r.body.tee();
  const rec = { url: String(url), status: r.status, text: null };
  rec.done = new Response(b).text().then((t) => (rec.text = t), () => (rec.text = '<<aborted>>'));
  bodies.push(rec);
  return new Response(a, { status: r.status, statusText: r.statusText, headers: r.headers });
};

// docs/chat.md's setup: resume, the last message only (mode 'last') or the
// whole list (mode 'full').
class Chat extends AbstractChat {
  constructor(id, { base = A, mode = 'last', messages = [], tok = token } = {}) {
    super({
      id,
      state: new State(messages),
      transport: new DefaultChatTransport({
        api: `${base}/v1/chat`,
        headers: { Authorization: `Bearer ${tok}` },
        fetch: recordingFetch,
        prepareSendMessagesRequest: mode === 'last' ? ({ id, messages }) => ({ body: { id, message: messages.at(-1) } }) : undefined,
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
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
async function waitFor(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
const plain = (x) => JSON.parse(JSON.stringify(x));
const last = (chat) => chat.messages.at(-1);
// The answer being streamed: the last message once it is the assistant's.
const answer = (chat) => (last(chat)?.role === 'assistant' ? last(chat) : undefined);
const textOf = (m) => (m?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
const toolPart = (m, name) => m?.parts.find((p) => p.type === `tool-${name}`);

async function getConversation(base, id) {
  const r = await fetch(`${base}/v1/conversations/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(r.status, 200);
  return (await r.json()).messages;
}
async function stopRoute(base, id, tok = token) {
  const r = await fetch(`${base}/v1/chat/${id}/stop`, { method: 'POST', headers: { Authorization: `Bearer ${tok}` } });
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}
// The client holds exactly the stored transcript, metadata included.
async function requireStored(what, chat, base, id) {
  assert.deepEqual(plain(chat.messages), await getConversation(base, id), `${what}: the client's copy is the stored one`);
}
const uid = (s) => `${s}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

// (a) A client that leaves mid-text and mid-tool (stop() aborts its fetch)
// resumes through GET /v1/chat/{id}/stream and ends with the stored
// transcript; the run went on meanwhile.
{
  const id = uid('runs-a-text');
  const chat = new Chat(id);
  const sent = chat.sendMessage({ text: 'tell a slow story' });
  await waitFor('text', () => textOf(answer(chat)).length > 0);
  await chat.stop();
  await sent;
  const cut = textOf(last(chat));
  await chat.resumeStream();
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  assert.ok(textOf(last(chat)).startsWith(cut) && textOf(last(chat)).length > cut.length, `the resumed answer goes on from where the client left: ${JSON.stringify(chat.messages)} status ${chat.status} ${chat.error}`);
  assert.equal(last(chat).metadata.finishReason, 'stop');
  await requireStored('(a) mid-text', chat, A, id);
  log('(a) mid-text: ok');
}
{
  const id = uid('runs-a-tool');
  const chat = new Chat(id);
  const sent = chat.sendMessage({ text: 'nap please' });
  await waitFor('the call', () => toolPart(last(chat), 'nap-thing')?.state === 'input-available');
  await chat.stop();
  await sent;
  await chat.resumeStream();
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  assert.deepEqual(toolPart(last(chat), 'nap-thing').output, { rested: true });
  assert.equal(textOf(last(chat)), 'Rested.');
  await requireStored('(a) mid-tool', chat, A, id);
  log('(a) mid-tool: ok');
}

// (b) A page opened on the other replica mid-run resumes the run started
// on the first and follows it to its end; so does the first client.
{
  const id = uid('runs-b');
  const first = new Chat(id, { base: A });
  const sent = first.sendMessage({ text: 'tell a slow story' });
  await waitFor('text', () => textOf(answer(first)).length > 0);
  const second = new Chat(id, { base: B, messages: await getConversation(B, id) });
  await second.resumeStream();
  await settle(second);
  await sent;
  await settle(first);
  assert.equal(second.status, 'ready', String(second.error));
  await requireStored('(b) the resuming page', second, B, id);
  await requireStored('(b) the first client', first, A, id);
  log('(b) ok');
}

// (c) Stop mid-text and mid-tool: useChat's stop() and the stop route,
// then a new message, accepted, in both request modes; and the stop route
// alone (docs/chat.md's button), whose client then holds the stored copy.
for (const mode of ['full', 'last']) {
  for (const [what, text, started] of [
    ['mid-text', 'tell a slow story', (c) => textOf(answer(c)).length > 0],
    ['mid-tool', 'nap please', (c) => toolPart(last(c), 'nap-thing')?.state === 'input-available'],
  ]) {
    const id = uid(`runs-c-${mode}-${what}`);
    const chat = new Chat(id, { mode });
    const sent = chat.sendMessage({ text });
    await waitFor(what, () => started(chat));
    await chat.stop();
    const stopped = await stopRoute(A, id);
    await sent;
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    assert.equal(stopped.body.finish_reason, 'interrupted');
    const stored = await getConversation(A, id);
    assert.equal(stored.at(-1).metadata.finishReason, 'interrupted');
    if (what === 'mid-tool') assert.deepEqual(toolPart(stored.at(-1), 'nap-thing').output, { rested: true }, 'the running tool finished and is recorded');
    await chat.sendMessage({ text: 'and now?' });
    await settle(chat);
    assert.equal(chat.status, 'ready', `(c) ${mode} ${what}: the next message: ${chat.error}`);
    assert.equal(textOf(last(chat)), 'Hello there.');
    log(`(c) ${mode} ${what}: ok`);
  }
  const id = uid(`runs-c-${mode}-route`);
  const chat = new Chat(id, { mode });
  const sent = chat.sendMessage({ text: 'tell a slow story' });
  await waitFor('text', () => textOf(answer(chat)).length > 0);
  assert.equal((await stopRoute(A, id)).status, 200);
  await sent;
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  await requireStored(`(c) ${mode} stop route`, chat, A, id);
  await chat.sendMessage({ text: 'and now?' });
  await settle(chat);
  assert.equal(chat.status, 'ready', String(chat.error));
  log(`(c) ${mode} stop route alone: ok`);
}
assert.equal((await stopRoute(A, 'runs-nothing-runs')).status, 204, 'nothing runs: 204');

// (d) A 300-message conversation driven in last-message mode: every turn
// is accepted; the model's side (the Go test) checks that the last turn's
// request was bounded by the context budget.
let longConversation;
{
  const id = uid('runs-d');
  const chat = new Chat(id, { mode: 'last' });
  for (let i = 0; i < 150; i++) {
    longConversation = `turn ${i} of the long conversation`;
    await chat.sendMessage({ text: longConversation });
    await settle(chat);
    assert.equal(chat.status, 'ready', `turn ${i}: ${chat.error}`);
  }
  assert.equal((await getConversation(A, id)).length, 300);
  log('(d) ok');
}

// (e) Usage metadata arrives with the answer and is stored.
{
  const id = uid('runs-e');
  const chat = new Chat(id);
  await chat.sendMessage({ text: 'hello' });
  await settle(chat);
  const md = last(chat).metadata;
  assert.equal(md.model, 'fake-model');
  assert.equal(md.finishReason, 'stop');
  assert.ok(!Number.isNaN(Date.parse(md.createdAt)), md.createdAt);
  assert.ok(md.usage.inputTokens > 0 && md.usage.outputTokens === 5 && md.usage.totalTokens === md.usage.inputTokens + 5, JSON.stringify(md.usage));
  await requireStored('(e)', chat, A, id);
  log('(e) ok');
}

// (f) Reasoning, then the call's arguments as they stream, then its input,
// in that order, on the wire and in the client's parts; reasoning parts
// are stored.
{
  const id = uid('runs-f');
  const chat = new Chat(id);
  const n = bodies.length;
  await chat.sendMessage({ text: 'think about beta' });
  await settle(chat);
  await bodies[n].done;
  const types = bodies[n].text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)).type);
  const at = (t) => types.indexOf(t);
  assert.ok(at('reasoning-start') < at('reasoning-delta') && at('reasoning-delta') < at('reasoning-end'), types.join());
  assert.ok(at('reasoning-end') < at('tool-input-start') && at('tool-input-start') < at('tool-input-delta'), types.join());
  assert.ok(at('tool-input-delta') < at('tool-input-available') && at('tool-input-available') < at('tool-output-available'), types.join());
  assert.ok(chat.state.seen.has('tool-lookup-thing:input-streaming'), 'the UI saw the call while its arguments streamed');
  const parts = last(chat).parts.map((p) => (p.type === 'reasoning' || p.type === 'text' ? `${p.type}:${p.text}` : p.type.startsWith('tool-') ? `${p.type}:${p.state}` : p.type));
  assert.deepEqual(parts, ['step-start', 'reasoning:Let me look it up.', 'tool-lookup-thing:output-available', 'step-start', 'reasoning:It is there.', 'text:Beta is v-beta.']);
  await requireStored('(f)', chat, A, id);
  log('(f) ok');
}

// (g) resume: true on a chat with no run: a new chat (useChat mounting
// with a fresh id), another owner's: 204, ready, no error, messages
// unchanged.
{
  for (const [what, id, tok] of [['new chat', uid('runs-g-new'), token], ['another owner\'s', uid('runs-g-theirs'), other]]) {
    if (tok === other) {
      const mine = new Chat(id);
      await mine.sendMessage({ text: 'hello' });
      await settle(mine);
    }
    const r = await fetch(`${A}/v1/chat/${id}/stream`, { headers: { Authorization: `Bearer ${tok}` } });
    assert.equal(r.status, 204, what);
    const chat = new Chat(id, { tok });
    await chat.resumeStream();
    assert.equal(chat.status, 'ready', what);
    assert.equal(chat.error, undefined, what);
    assert.deepEqual(chat.messages, [], what);
  }
  log('(g) ok');
}

// (h) The replica running a turn is killed (SIGKILL) mid-answer. A reader
// on the other replica ends (an error chunk, then [DONE]) once the lease
// has expired, the transcript holds what was streamed, marked interrupted,
// and the next message is accepted.
{
  const id = uid('runs-h');
  const doomed = new Chat(id, { base: replica });
  const sent = doomed.sendMessage({ text: 'tell a slow story' });
  await waitFor('text', () => textOf(answer(doomed)).split(' ').length > 3);
  process.kill(replicaPid, 'SIGKILL');
  const killedAt = Date.now();
  await sent;
  const streamed = textOf(last(doomed));
  const reader = new Chat(id, { base: B, messages: await getConversation(B, id) });
  await reader.resumeStream();
  await settle(reader);
  assert.equal(reader.status, 'error', 'the reader ends with an error chunk');
  assert.match(reader.error.message, /stopped before it finished/);
  const stored = await getConversation(B, id);
  assert.ok(textOf(stored.at(-1)).startsWith(streamed), `what was streamed is stored: ${JSON.stringify(streamed)} vs ${JSON.stringify(textOf(stored.at(-1)))}`);
  assert.equal(stored.at(-1).metadata.finishReason, 'interrupted');
  assert.deepEqual(plain(reader.messages), stored, 'the reader holds the stored transcript');
  const next = new Chat(id, { base: B, messages: stored });
  await next.sendMessage({ text: 'are you there?' });
  await settle(next);
  const waited = Date.now() - killedAt;
  assert.equal(next.status, 'ready', `the next message: ${next.error}`);
  assert.equal(textOf(last(next)), 'Hello there.');
  assert.ok(waited < leaseMs + 5000, `accepted ${waited} ms after the kill, lease ${leaseMs} ms`);
  log(`(h) ok: the next message was accepted ${waited} ms after the kill (lease ${leaseMs} ms)`);
}

// The head a replay begins with rebuilds a stored answer of every kind of
// part exactly: the client resets the answer at the replay's start chunk
// and holds the stored copy after the head (INVOICED_HEAD is
// RunHead(INVOICED_HEAD_MESSAGE)). Its stale copy is replaced in place.
{
  const stored = JSON.parse(process.env.INVOICED_HEAD_MESSAGE);
  const head = process.env.INVOICED_HEAD + 'data: [DONE]\n\n';
  const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] };
  const chat = new (class extends AbstractChat {})({
    id: 'head',
    state: new State([user, { id: stored.id, role: 'assistant', parts: [{ type: 'text', text: 'stale', state: 'streaming' }] }]),
    transport: new DefaultChatTransport({ api: 'http://head.invalid/v1/chat', fetch: async () => new Response(head, { status: 200 }) }),
    onError: () => {},
  });
  await chat.resumeStream();
  assert.equal(chat.status, 'ready', String(chat.error));
  assert.deepEqual(plain(chat.messages), [user, stored]);
  log('head: ok');
}

console.log(JSON.stringify({ longConversation }));
