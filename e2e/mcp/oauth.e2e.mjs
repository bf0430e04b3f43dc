// The official MCP TypeScript SDK's OAuth client (its auth() through the
// transport's authProvider) against the whole service, from a cold start
// with only the server's URL: discovery, registration (dynamic, or a
// Client ID Metadata Document when INVOICED_CLIENT_DOCUMENT is set), the
// consent page driven in Chromium, the token, tools, a refresh, and a
// revocation. mcp/oauth_e2e_test.go runs it and checks the database;
// the consent page's screenshot goes to INVOICED_SCREENSHOTS when set.
// Prints one JSON line of what it saw; a failed expectation throws.
import assert from 'node:assert/strict';
import http from 'node:http';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, auth } from '@modelcontextprotocol/sdk/client/auth.js';

const env = (k) => { const v = process.env[k]; assert.ok(v, `${k} is not set`); return v; };
const base = env('INVOICED_URL');
const username = env('INVOICED_USERNAME');
const password = env('INVOICED_PASSWORD');
const clientDocument = process.env.INVOICED_CLIENT_DOCUMENT;
const serverUrl = new URL(base + '/mcp');
const out = {};

// The client's own loopback listener, where the browser comes back.
const callback = http.createServer((_, res) => { res.end('back in the client'); });
await new Promise((r) => callback.listen(0, '127.0.0.1', r));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

// An OAuthClientProvider that keeps everything in memory, as a desktop
// host keeps it in its store.
class Provider {
  constructor() { this.saved = {}; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadataUrl() { return clientDocument; }
  get clientMetadata() {
    return { client_name: 'invoiced e2e agent', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) { this.saved.tokens = t; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
}

const provider = new Provider();
const connect = async () => {
  const client = new Client({ name: 'invoiced-oauth-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
};

// 1. Cold start: the 401 leads the SDK through discovery and
// registration to an authorization URL for its user.
const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
await assert.rejects(new Client({ name: 'invoiced-oauth-e2e', version: '1.0.0' }).connect(first), UnauthorizedError);
assert.ok(provider.authorizationUrl, 'the SDK asked its user to authorize');
const authURL = new URL(provider.authorizationUrl);
out.authorize = Object.fromEntries(authURL.searchParams);
out.clientID = provider.saved.client.client_id;

// 2. The user: signs in on the way to the consent page, approves.
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--disable-sync', '--no-first-run'] });
const errors = [];
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(authURL.href);
  assert.match(page.url(), /\/login\?next=%2Foauth%2Fconsent%2F/);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/oauth\/consent\//);
  if (process.env.INVOICED_SCREENSHOTS) await page.screenshot({ path: `${process.env.INVOICED_SCREENSHOTS}/consent.png`, fullPage: true });
  out.consent = {
    client: await page.locator('#client-name').innerText(),
    redirectHost: await page.locator('#redirect-host').innerText(),
    writeChecked: await page.locator('#scope-write').isChecked(),
  };
  await Promise.all([page.waitForURL((u) => u.href.startsWith(redirectUrl)), page.locator('#approve').click()]);
  const back = new URL(page.url());
  out.back = { state: back.searchParams.get('state'), iss: back.searchParams.get('iss'), hasCode: !!back.searchParams.get('code') };
  assert.equal(back.searchParams.get('state'), authURL.searchParams.get('state'));
  await first.finishAuth(back.searchParams.get('code'));
} finally {
  await browser.close();
}
assert.deepEqual(errors, []);
out.scope = provider.saved.tokens.scope;

// 3. The tools, and a read tool's call, over the access token.
let c = await connect();
out.tools = (await c.client.listTools()).tools.map((t) => t.name);
const listed = await c.client.callTool({ name: 'list-invoices', arguments: {} });
assert.equal(listed.isError, undefined, JSON.stringify(listed));
out.listed = listed.structuredContent;
await c.client.close();

// 4. Refresh: a new access token and a new refresh token.
const before = { ...provider.saved.tokens };
assert.equal(await auth(provider, { serverUrl }), 'AUTHORIZED');
assert.notEqual(provider.saved.tokens.access_token, before.access_token);
assert.notEqual(provider.saved.tokens.refresh_token, before.refresh_token);
c = await connect();
out.toolsAfterRefresh = (await c.client.listTools()).tools.length;
await c.client.close();

// 5. Revoke (RFC 7009, as a host's "disconnect" does): the next call is
// 401 invalid_token.
const revoked = await fetch(base + '/oauth/revoke', { method: 'POST',
  body: new URLSearchParams({ token: provider.saved.tokens.refresh_token, client_id: out.clientID }) });
assert.equal(revoked.status, 200);
const after = await fetch(serverUrl, { method: 'POST',
  headers: { Authorization: `Bearer ${provider.saved.tokens.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } }) });
out.afterRevoke = { status: after.status, wwwAuthenticate: after.headers.get('www-authenticate') };

callback.close();
console.log(JSON.stringify(out));
