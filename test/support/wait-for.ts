/**
 * Polls `check` until it returns something truthy (its value), or throws naming `what` (and
 * `detail()`, e.g. a server's stderr) after `withinMs`. The tests' one way to wait: on the
 * condition itself, never on a guessed time.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  withinMs: number,
  everyMs = 50,
  detail?: () => string,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${detail ? `\n${detail()}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
