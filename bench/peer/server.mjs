// The peer a user would otherwise pick for make bench-chat: a plain Node
// HTTP route using ai@7's streamText with its mock model (MockLanguageModelV4)
// and the same tool doing the same query as invoiced's get-customer (a
// primary-key lookup). Each request: one tool call, then a short text,
// streamed as the UI message stream v1.
import http from 'node:http';
import { streamText, convertToModelMessages, stepCountIs } from 'ai';
import { model, system, tools, readBody } from './common.mjs';

const port = Number(process.env.PORT ?? 3999);

http.createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/api/chat') {
    res.writeHead(404).end();
    return;
  }
  try {
    const body = await readBody(req);
    const result = streamText({ model, system, messages: await convertToModelMessages(body.messages), tools, stopWhen: stepCountIs(8) });
    result.pipeUIMessageStreamToResponse(res);
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
}).listen(port, '127.0.0.1', () => console.log(`peer listening on ${port}`));
