// A webhook receiver for the Go tests: every request is verified with the
// standardwebhooks package (the reference implementation of Standard
// Webhooks), not with invoiced's own code. Each key the test gives it is
// tried on its own, so a rotation's two signatures can be told apart.
//
// stdin: JSON lines {"secrets": ["whsec_…", …]} replace the keys ({"ack": true}
// on stdout says done).
// env WEBHOOK_SCRIPT: comma-separated statuses to answer in turn ("500,500,500"),
// then 200.
// stdout: {"listening": PORT}, then one JSON line per request.
import http from "node:http";
import readline from "node:readline";
import { Webhook } from "standardwebhooks";

let secrets = [];
const script = (process.env.WEBHOOK_SCRIPT || "").split(",").filter(Boolean).map(Number);
let served = 0;

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (Array.isArray(msg.secrets)) secrets = msg.secrets;
  console.log(JSON.stringify({ ack: true }));
});

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const verifiedWith = [];
    let error = "";
    secrets.forEach((secret, i) => {
      try {
        new Webhook(secret).verify(body, req.headers);
        verifiedWith.push(i);
      } catch (e) {
        error = e.message;
      }
    });
    let envelope = null;
    try {
      envelope = JSON.parse(body);
    } catch {
      error = error || "body is not JSON";
    }
    const status = served < script.length ? script[served] : 200;
    served++;
    console.log(JSON.stringify({
      id: req.headers["webhook-id"] || "",
      type: envelope?.type || "",
      verified_with: verifiedWith,
      error,
      status,
      signatures: (req.headers["webhook-signature"] || "").split(" ").filter(Boolean).length,
      envelope,
    }));
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(status < 300 ? "ok" : "the receiver says no (" + status + ")");
  });
});

server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ listening: server.address().port })));
process.stdin.on("end", () => server.close());
