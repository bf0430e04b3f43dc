// Reads the Factur-X PDF at argv[2] with factur-x-kit and prints what it
// found: the profile, the document's number and type, and its gross total
// as JavaScript writes the number it parsed (946, 53.5), as JSON.
import { readFile } from "node:fs/promises";
import { FacturX } from "factur-x-kit";

const pdf = await readFile(process.argv[2]);
const fx = await FacturX.fromPDF(new Uint8Array(pdf));
const o = fx.object;
process.stdout.write(JSON.stringify({ profile: o.profile, number: o.document?.id, type: o.document?.type, total: String(o.totals?.grossTotal) }));
