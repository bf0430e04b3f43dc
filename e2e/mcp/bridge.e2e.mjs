// docs/mcp.md's bridge for clients that cannot send an Authorization
// header (Claude Desktop's config spawns a stdio command): mcp-remote,
// pinned in package.json, run with docs/mcp.md's arguments, the token in
// the environment. The official TypeScript SDK's stdio client speaks to
// it as such a client does. Prints one JSON line of what it saw.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const env = (k) => { const v = process.env[k]; assert.ok(v, `${k} is not set`); return v; };
const url = env('INVOICED_MCP_URL');
const token = env('INVOICED_CLERK_TOKEN');
const draftID = env('INVOICED_DRAFT_ID');
// The header argument as docs/mcp.md writes it: mcp-remote expands
// ${AUTH_HEADER} itself, and the value's space stays out of the argument
// list, which some clients split on spaces.
const header = env('INVOICED_BRIDGE_HEADER');

const proxy = new URL('./node_modules/mcp-remote/dist/proxy.js', import.meta.url).pathname;
const stderr = [];
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [proxy, `${url}/mcp`, '--header', header],
  env: { ...process.env, AUTH_HEADER: `Bearer ${token}` },
  stderr: 'pipe',
});
transport.stderr.on('data', (d) => stderr.push(String(d)));
const client = new Client({ name: 'invoiced-bridge-e2e', version: '1.0.0' });
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const got = await client.callTool({ name: 'get-invoice', arguments: { invoice_id: draftID } });
  assert.equal(got.isError, undefined, JSON.stringify(got));
  console.log(JSON.stringify({
    server: client.getServerVersion().name,
    tools: tools.tools.map((t) => t.name),
    invoice: got.structuredContent,
  }));
} catch (err) {
  console.error(stderr.join(''));
  throw err;
} finally {
  await client.close();
}
