// The official MCP TypeScript SDK as the client of /mcp, against the whole
// service (mcp/e2e_test.go starts two instances over one database and
// asserts the database afterwards). Prints one JSON line of what it saw;
// any failed expectation throws, which fails the Go test with the stack.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const env = (k) => { const v = process.env[k]; assert.ok(v, `${k} is not set`); return v; };
const urlA = env('INVOICED_MCP_URL_A');
const urlB = env('INVOICED_MCP_URL_B');
const clerk = env('INVOICED_CLERK_TOKEN');
const approver = env('INVOICED_APPROVER_TOKEN');
const draftID = env('INVOICED_DRAFT_ID');
const customerID = env('INVOICED_CUSTOMER_ID');
const out = {};

// connect opens a session. answer, when given, is the client's elicitation
// handler (the client then declares elicitation). The wrapped fetch
// resolves streamOpen once the session's GET stream (where notifications
// arrive) is open.
async function connect(base, token, answer) {
  let streamOpened;
  const streamOpen = new Promise((resolve) => { streamOpened = resolve; });
  const fetchSpy = async (input, init) => {
    const res = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamOpened();
    return res;
  };
  const client = new Client({ name: 'invoiced-e2e', version: '1.0.0' },
    { capabilities: answer ? { elicitation: { form: {} } } : {} });
  const elicitations = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      elicitations.push(req.params);
      return answer(req.params);
    });
  }
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
  const transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'),
    { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: fetchSpy });
  await client.connect(transport);
  return { client, transport, elicitations, updates, streamOpen };
}

// errorOf parses an isError result's text: {"error": {...}}.
function errorOf(res) {
  assert.equal(res.isError, true, `expected an error result, got ${JSON.stringify(res)}`);
  assert.equal(res.structuredContent, undefined);
  return JSON.parse(res.content[0].text).error;
}

async function waitFor(pred, what, ms = 10_000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const call = (c, name, args) => c.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });

// 1. A clerk whose client can ask its user: initialize and list.
let answer = { action: 'accept', content: { confirm: true } };
const a = await connect(urlA, clerk, () => answer);
out.protocolVersion = a.transport.protocolVersion;
const caps = a.client.getServerCapabilities();
out.capabilities = { tools: !!caps.tools, subscribe: caps.resources?.subscribe === true, prompts: !!caps.prompts };
out.instructions = a.client.getInstructions();
out.serverInfo = a.client.getServerVersion();
const { tools } = await a.client.listTools();
out.tools = Object.fromEntries(tools.map((t) => [t.name,
  { title: t.title, annotations: t.annotations, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null, description: t.description }]));

// 2. A read tool: structured output with its JSON as text.
const got = await call(a, 'get-invoice', { invoice_id: draftID });
assert.equal(got.isError, undefined);
assert.deepEqual(JSON.parse(got.content[0].text), got.structuredContent);
out.getInvoice = got.structuredContent;

// 3. A bound tool, the user accepts: one elicitation, one result.
const made = await call(a, 'create-customer', { name: 'Elicited Ltd', currency: 'EUR', email: 'ap@elicited.example' });
assert.equal(made.isError, undefined, JSON.stringify(made));
assert.equal(a.elicitations.length, 1);
out.acceptedElicitation = a.elicitations[0];
out.created = made.structuredContent;

// 4. The same tool, the user declines: CONFIRMATION_INVALID denied.
answer = { action: 'decline' };
const declined = errorOf(await call(a, 'create-customer', { name: 'Declined Ltd', currency: 'EUR' }));
assert.equal(a.elicitations.length, 2);
out.declined = declined;

// 4b. The user dismisses the form without answering: CONFIRMATION_INVALID
// cancelled, which is not a no.
answer = { action: 'cancel' };
out.cancelled = errorOf(await call(a, 'create-customer', { name: 'Cancelled Ltd', currency: 'EUR' }));
assert.equal(a.elicitations.length, 3);

// 5. The user accepts the form but leaves confirm unticked, with a reason.
answer = { action: 'accept', content: { confirm: false, reason: 'wrong customer' } };
out.unticked = errorOf(await call(a, 'create-customer', { name: 'Unticked Ltd', currency: 'EUR' }));

// 6. A client without elicitation: CONFIRMATION_REQUIRED, nothing done.
const plain = await connect(urlA, clerk);
out.noElicitation = errorOf(await call(plain, 'create-customer', { name: 'Two Phase Ltd', currency: 'EUR' }));

// 7. Input that fails the schema: VALIDATION_FAILED naming the field.
out.invalid = errorOf(await call(a, 'create-draft-invoice',
  { customer_id: customerID, lines: [{ description: 'x', quantity: 0, unit_amount: 100 }] }));
out.unknownField = errorOf(await call(a, 'get-invoice', { invoice_id: draftID, colour: 'red' }));

// 8. A consequential tool: APPROVAL_REQUIRED, never an elicitation.
const before = a.elicitations.length;
const required = errorOf(await call(a, 'issue-invoice', { invoice_id: draftID }));
assert.equal(a.elicitations.length, before);
out.required = required;
const uri = required.resource;

// 9. Subscribe on this replica and on another; read it (pending).
await a.client.subscribeResource({ uri });
const pending = JSON.parse((await a.client.readResource({ uri })).contents[0].text);
out.pendingStatus = pending.status;
const b = await connect(urlB, clerk);
await b.client.subscribeResource({ uri });
await Promise.all([a.streamOpen, b.streamOpen]);

// 10. An approver approves over REST on replica A; both clients hear it.
const approved = await fetch(`${urlA}/v1/approvals/${required.approval_id}/approve`, {
  method: 'POST', headers: { Authorization: `Bearer ${approver}`, 'Content-Type': 'application/json' }, body: '{}',
});
assert.equal(approved.status, 200, await approved.text());
await waitFor(() => a.updates.includes(uri) && b.updates.includes(uri), 'the resource update on both replicas');
out.updatesA = a.updates;
out.updatesB = b.updates;
out.approvedStatus = JSON.parse((await b.client.readResource({ uri })).contents[0].text).status;

// 11. The call again succeeds, once.
const issued = await call(a, 'issue-invoice', { invoice_id: draftID });
assert.equal(issued.isError, undefined, JSON.stringify(issued));
out.issued = issued.structuredContent;
out.again = errorOf(await call(a, 'issue-invoice', { invoice_id: draftID }));
out.consumedStatus = JSON.parse((await a.client.readResource({ uri })).contents[0].text).status;

// 12. Resources and prompts.
out.resources = (await a.client.listResources()).resources.map((r) => r.uri);
out.templates = (await a.client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate);
out.invoiceResource = JSON.parse((await a.client.readResource({ uri: `invoiced://invoices/${draftID}` })).contents[0].text);
out.customerResource = JSON.parse((await a.client.readResource({ uri: `invoiced://customers/${customerID}` })).contents[0].text);
await assert.rejects(a.client.readResource({ uri: 'invoiced://invoices/00000000-0000-0000-0000-000000000000' }));
out.prompts = (await a.client.listPrompts()).prompts.map((p) => p.name);
const prompt = await a.client.getPrompt({ name: 'review-overdue-invoices', arguments: { as_of: '2026-12-01' } });
out.promptText = prompt.messages[0].content.text;

// 13. An approver's session: resources and prompts, no tools.
const ap = await connect(urlA, approver);
out.approverCapabilities = { tools: !!ap.client.getServerCapabilities().tools };
assert.deepEqual((await ap.client.listTools()).tools, []);
out.approverReads = JSON.parse((await ap.client.readResource({ uri })).contents[0].text).status;

// 14. Replica B's confirmations expire after a second: an unanswered
// elicitation ends as CONFIRMATION_INVALID expired, one result.
const slow = await connect(urlB, clerk, () => new Promise((r) => setTimeout(() => r({ action: 'accept', content: { confirm: true } }), 3000)));
out.expired = errorOf(await call(slow, 'create-customer', { name: 'Too Late Ltd', currency: 'EUR' }));
assert.equal(slow.elicitations.length, 1);

for (const c of [a, plain, b, ap, slow]) await c.client.close();
console.log(JSON.stringify(out));
