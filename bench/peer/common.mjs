// What both peers of make bench-chat share: ai@7's mock model answering
// one get-customer call, then a short text; the tool, running the same
// primary-key lookup as invoiced's get-customer through pg; and the
// request's body.
import pg from 'pg';
import { tool, jsonSchema } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

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
export const model = new MockLanguageModelV4({
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

export const system = 'You are the assistant of an invoicing back office.';

export const tools = {
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

export async function readBody(req) {
  let raw = '';
  for await (const c of req) raw += c;
  return JSON.parse(raw);
}
