/** Polls `check` until it returns something truthy (its value), or throws naming `what` after `withinMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, withinMs: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
