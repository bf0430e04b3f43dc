// What the browser tests share: the browser, screenshots, console
// watching, signing in, layout and accessibility checks.
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`missing ${k}`);
  return v;
};

// Progress goes to stderr: stdout is the Go side's answer.
export const log = (...a) => console.error("[e2e]", ...a);

export function launch() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

// shot keeps the whole page, or with { fullPage: false } the window as
// the user sees it (the chat's sticky composer and lists are drawn where
// the window is, so a whole-page picture misplaces them).
export async function shot(page, dir, name, { fullPage = true } = {}) {
  const file = path.join(dir, name);
  await page.screenshot({ path: file, fullPage });
  log("screenshot", file);
}

// Every page must run without console errors: a CSP violation (an inline
// script or style slipping in, an eval) shows up here.
export function watch(page, errors) {
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
}

// signIn opens target, is sent to sign in, and comes back to target.
export async function signIn(page, base, user, password, target = "/inbox") {
  await page.goto(`${base}${target}`);
  assert.match(page.url(), new RegExp(`/login\\?next=${encodeURIComponent(target).replace(/[.]/g, "\\.")}$`));
  await page.getByLabel("Username").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${base}${target}`);
}

export async function noHorizontalScroll(page, label) {
  const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(sw <= cw, `${label}: page is ${sw}px wide in a ${cw}px viewport`);
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// axe runs axe-core (pinned in package.json) on the page as it is: no
// serious or critical violation may remain.
export async function axe(page, label) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  assert.deepEqual(bad, [], `${label}: axe-core found serious or critical violations`);
  log("axe", label, `${result.violations.length} minor or moderate`, result.violations.map((v) => v.id).join(" "));
}

// newestInView checks, without scrolling, that the chat's newest message
// lies inside the window, above the message box, and that the box itself
// is in the window: where the page must keep it after a send, an answer,
// a reload, a stop or opening a conversation. The page may still be
// laying out what just arrived, so it is given a few frames to settle.
export async function newestInView(page, label) {
  const measure = () => {
    const msgs = document.querySelectorAll("li.msg");
    const box = document.querySelector("form.composer")?.getBoundingClientRect();
    if (!msgs.length || !box) return { missing: true };
    const m = msgs[msgs.length - 1].getBoundingClientRect();
    const r = { top: m.top, bottom: m.bottom, boxTop: box.top, boxBottom: box.bottom, height: window.innerHeight };
    // Half a pixel for subpixel layout.
    r.ok = r.top >= -0.5 && r.bottom <= r.boxTop + 0.5 && r.boxTop >= -0.5 && r.boxBottom <= r.height + 0.5;
    return r;
  };
  try {
    await page.waitForFunction(`(${measure})().ok`, null, { timeout: 5000, polling: 50 });
  } catch (err) {
    const r = await page.evaluate(measure);
    assert.fail(`${label}: the newest message is not in view above the message box: ${JSON.stringify(r)} (${err.message.split("\n")[0]})`);
  }
}
