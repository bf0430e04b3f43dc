// Amounts for people, as the server's pages show them (money.Display):
// grouped thousands, the currency's ISO 4217 digits, the code last —
// 1623750 USD is "16,237.50 USD". The digits come from the server's own
// table (the page's data-currency-exponents), not the browser's.
let exponents = {};

export function setExponents(table) {
  exponents = table || {};
}

// grouped is display without the code. amount is an integer count of minor
// units; BigInt keeps every digit of it.
export function grouped(amount, currency) {
  const exp = exponents[currency] || 0;
  let u = BigInt(amount);
  const negative = u < 0n;
  if (negative) u = -u;
  const pow = 10n ** BigInt(exp);
  let s = (u / pow).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  if (exp > 0) s += '.' + (u % pow).toString().padStart(exp, '0');
  return (negative ? '-' : '') + s;
}

export function display(amount, currency) {
  return `${grouped(amount, currency)} ${currency}`;
}

// ONE is the quantity 1 in ten-thousandths, as the server holds
// quantities (quantity.Quantity).
const ONE = 10000n;

// parseQuantity reads a line's quantity as the server accepts it: a
// decimal string of at most 14 whole digits and 4 decimals ("7.5"), or a
// whole JSON number, above 0. It returns ten-thousandths as a BigInt, or
// null for what the server would refuse.
export function parseQuantity(v) {
  let q = null;
  if (Number.isSafeInteger(v)) {
    q = BigInt(v) * ONE;
  } else if (typeof v === 'string' && /^[0-9]{1,14}(\.[0-9]{1,4})?$/.test(v)) {
    const [w, f = ''] = v.split('.');
    q = BigInt(w) * ONE + BigInt(f.padEnd(4, '0'));
  }
  return q !== null && q > 0n ? q : null;
}

// quantity shows a line's quantity as the server's pages and documents do
// (document.Quantity): grouped thousands and the decimals it has, 1234567
// is "1,234,567" and "7.50" is "7.5". Anything that is not a quantity is
// shown as it came.
export function quantity(v) {
  let q = Number.isSafeInteger(v) ? BigInt(v) * ONE : parseQuantity(v);
  if (q === null) return String(v ?? '');
  const negative = q < 0n;
  if (negative) q = -q;
  let s = (q / ONE).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = (q % ONE).toString().padStart(4, '0').replace(/0+$/, '');
  if (frac) s += '.' + frac;
  return (negative ? '-' : '') + s;
}

// divHalfEven is a / b rounded half to even, for a ≥ 0 and b > 0.
function divHalfEven(a, b) {
  let q = a / b;
  const r2 = (a % b) * 2n;
  if (r2 > b || (r2 === b && q % 2n === 1n)) q += 1n;
  return q;
}

// tax is VAT as the server computes it (money.Tax): amount × rate in
// basis points / 10,000, rounded half to even. BigInt keeps every digit
// of the product.
export function tax(amount, bps) {
  return divHalfEven(BigInt(amount) * BigInt(bps), 10000n);
}

const whole = (v) => Number.isSafeInteger(v) && v >= 0;

// priced is lines priced as the server prices a draft
// (invoices.ComputeLines, docs/adr/0021-vat-per-category-and-rate.md):
// each line's amount is quantity × unit price rounded half to even; per
// VAT category and rate, the VAT of the lines' sum, rounded once and
// shared back over its lines by their cumulative amounts; and the
// subtotal, tax and total, as BigInts. It is null while a line is
// incomplete (a call still being written) or holds what the server
// would refuse.
export function priced(lines) {
  if (!Array.isArray(lines) || lines.length === 0) return null;
  const out = { lines: [], subtotal: 0n, tax: 0n, total: 0n };
  const groups = new Map();
  for (const l of lines) {
    const q = l ? parseQuantity(l.quantity) : null;
    if (q === null || !whole(l.unit_amount) || !whole(l.tax_rate_bps ?? 0)) return null;
    const bps = BigInt(l.tax_rate_bps ?? 0);
    const amount = divHalfEven(q * BigInt(l.unit_amount), ONE);
    const key = `${l.vat_category || (bps > 0n ? 'S' : 'Z')} ${bps}`;
    if (!groups.has(key)) groups.set(key, { bps, net: 0n, lines: [] });
    const g = groups.get(key);
    const line = { amount, tax: 0n };
    g.net += amount;
    g.lines.push(line);
    out.lines.push(line);
    out.subtotal += amount;
  }
  for (const g of groups.values()) {
    const t = tax(g.net, g.bps);
    let cum = 0n;
    let prev = 0n;
    for (const line of g.lines) {
      cum += line.amount;
      const upTo = g.net > 0n ? divHalfEven(t * cum, g.net) : 0n;
      line.tax = upTo - prev;
      prev = upTo;
    }
    out.tax += t;
  }
  out.total = out.subtotal + out.tax;
  return out;
}
