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
