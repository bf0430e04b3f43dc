// The second peer of make bench-chat: the same route as server.mjs made
// resumable the way the AI SDK documents it (chatbot-resume-streams):
// resumable-stream over Redis, so GET /api/chat/{id}/stream replays and
// follows a running answer. Its producer keeps the stream in its own
// memory and publishes it to resumers through Redis; it stores no
// transcript (invoiced stores one and logs every run in PostgreSQL).
import http from 'node:http';
import { createClient } from 'redis';
import { createResumableStreamContext } from 'resumable-stream';
import { streamText, convertToModelMessages, stepCountIs, generateId, UI_MESSAGE_STREAM_HEADERS } from 'ai';
import { model, system, tools, readBody } from './common.mjs';

const port = Number(process.env.PORT ?? 3998);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const publisher = createClient({ url: redisUrl });
const subscriber = createClient({ url: redisUrl });
await Promise.all([publisher.connect(), subscriber.connect()]);
// waitUntil null: a long-lived Node server keeps running after a response.
const streams = createResumableStreamContext({ waitUntil: null, publisher, subscriber, keyPrefix: `bench-peer-${process.pid}` });
// The running stream of each chat (a real app keeps it with the chat).
const active = new Map();

http.createServer(async (req, res) => {
  const m = /^\/api\/chat\/([^/]+)\/stream$/.exec(req.url);
  try {
    if (req.method === 'GET' && m) {
      const id = active.get(m[1]);
      const s = id && (await streams.resumeExistingStream(id));
      if (!s) {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, UI_MESSAGE_STREAM_HEADERS);
      for await (const chunk of s) res.write(chunk);
      res.end();
      return;
    }
    if (req.method !== 'POST' || req.url !== '/api/chat') {
      res.writeHead(404).end();
      return;
    }
    const body = await readBody(req);
    const result = streamText({ model, system, messages: await convertToModelMessages(body.messages), tools, stopWhen: stepCountIs(8) });
    result.pipeUIMessageStreamToResponse(res, {
      originalMessages: body.messages,
      // A resumed client needs the answer's id in its start chunk, or it
      // holds the answer twice.
      generateMessageId: generateId,
      consumeSseStream: async ({ stream }) => {
        const streamId = generateId();
        active.set(body.id, streamId);
        await streams.createNewResumableStream(streamId, () => stream);
      },
      onFinish: () => active.delete(body.id),
    });
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
}).listen(port, '127.0.0.1', () => console.log(`resumable peer listening on ${port}`));
