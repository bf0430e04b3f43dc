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

// quantity groups a line's quantity as the server's pages and documents do
// (document.Quantity): 1234567 is "1,234,567".
export function quantity(q) {
  return BigInt(q).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

// tax is a line's tax as the server computes it (money.Tax): amount ×
// rate in basis points / 10,000, rounded half to even. BigInt keeps
// every digit of the product.
export function tax(amount, bps) {
  const p = BigInt(amount) * BigInt(bps);
  let q = p / 10000n;
  const r = p % 10000n;
  if (r > 5000n || (r === 5000n && q % 2n === 1n)) q += 1n;
  return q;
}

const whole = (v) => Number.isSafeInteger(v) && v >= 0;

// priced is lines priced as the server prices a draft
// (invoices.ComputeLines): each line's amount and tax, and the subtotal,
// tax and total, as BigInts. It is null while a line is incomplete (a
// call still being written) or holds what the server would refuse.
export function priced(lines) {
  if (!Array.isArray(lines) || lines.length === 0) return null;
  const out = { lines: [], subtotal: 0n, tax: 0n, total: 0n };
  for (const l of lines) {
    if (!l || !whole(l.quantity) || !whole(l.unit_amount) || !whole(l.tax_rate_bps)) return null;
    const amount = BigInt(l.quantity) * BigInt(l.unit_amount);
    const t = tax(amount, l.tax_rate_bps);
    out.lines.push({ amount, tax: t });
    out.subtotal += amount;
    out.tax += t;
  }
  out.total = out.subtotal + out.tax;
  return out;
}
