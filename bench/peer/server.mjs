// The peer a user would otherwise pick for make bench-chat: a plain Node
// HTTP route using ai@7's streamText with its mock model (MockLanguageModelV4)
// and the same tool doing the same query as invoiced's get-customer (a
// primary-key lookup). Each request: one tool call, then a short text,
// streamed as the UI message stream v1.
import http from 'node:http';
import pg from 'pg';
import { streamText, tool, jsonSchema, convertToModelMessages, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

const port = Number(process.env.PORT ?? 3999);
const customerId = process.env.BENCH_CUSTOMER_ID;
// The same pool size as invoiced's default (4 per core, at least 8).
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 8 });

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const streamOf = (parts) => new ReadableStream({
  start(c) { for (const p of parts) c.enqueue(p); c.close(); },
});
let calls = 0;
const model = new MockLanguageModelV4({
  doStream: async ({ prompt }) => {
    // The mock records every call; forget them so memory stays flat.
    model.doStreamCalls.length = 0;
    const answered = prompt.some((m) => m.role === 'tool');
    if (!answered) {
      return { stream: streamOf([
        { type: 'stream-start', warnings: [] },
        { type: 'tool-call', toolCallId: `call_${++calls}`, toolName: 'get-customer', input: JSON.stringify({ customer_id: customerId }) },
        { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
      ]) };
    }
    return { stream: streamOf([
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Found ' },
      { type: 'text-delta', id: 't1', delta: 'it.' },
      { type: 'text-end', id: 't1' },
      { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
    ]) };
  },
});

const tools = {
  'get-customer': tool({
    description: 'Get one customer by customer_id.',
    inputSchema: jsonSchema({
      type: 'object', additionalProperties: false, required: ['customer_id'],
      properties: { customer_id: { type: 'string', format: 'uuid' } },
    }),
    execute: async ({ customer_id }) => {
      const r = await pool.query(
        'SELECT id, name, email, currency, version, created_at, updated_at FROM customers WHERE id = $1', [customer_id]);
      return r.rows[0] ?? { error: 'not found' };
    },
  }),
};

http.createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/api/chat') {
    res.writeHead(404).end();
    return;
  }
  let raw = '';
  for await (const c of req) raw += c;
  try {
    const body = JSON.parse(raw);
    const result = streamText({
      model,
      system: 'You are the assistant of an invoicing back office.',
      messages: await convertToModelMessages(body.messages),
      tools,
      stopWhen: stepCountIs(8),
    });
    result.pipeUIMessageStreamToResponse(res);
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
}).listen(port, '127.0.0.1', () => console.log(`peer listening on ${port}`));
